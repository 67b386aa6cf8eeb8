package proxy

import (
	"net/url"
	"strconv"
	"strings"
)

// QueryFilter keeps a route's allowed query parameters and enforces caps on
// numeric ones. It is immutable and safe for concurrent use.
type QueryFilter struct {
	// Allow, when not nil, lists the parameters kept; others are dropped.
	Allow map[string]bool
	// Max caps numeric parameters.
	Max map[string]int64
	// DropOverMax drops a parameter over its cap instead of refusing the
	// request.
	DropOverMax bool
}

// Filter returns raw (a URL's RawQuery) with only the allowed parameters,
// in their order and encoding. bad names a parameter over its cap (or not
// a number where one is capped) when the request must be refused.
// Malformed pairs (bad percent-encoding, empty names) are dropped.
func (f *QueryFilter) Filter(raw string) (out, bad string) {
	if raw == "" {
		return "", ""
	}
	var b strings.Builder
	for pair := range strings.SplitSeq(raw, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || name == "" {
			continue
		}
		if f.Allow != nil && !f.Allow[name] {
			continue
		}
		if limit, capped := f.Max[name]; capped {
			val, err := url.QueryUnescape(v)
			n, perr := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
			if err != nil || perr != nil || n > limit || n < 0 {
				if f.DropOverMax {
					continue
				}
				return "", name
			}
		}
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(pair)
	}
	return b.String(), ""
}
