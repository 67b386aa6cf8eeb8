package proxy

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

var openverseQuery = &QueryFilter{
	Allow: map[string]bool{"q": true, "page": true, "page_size": true, "license": true},
	Max:   map[string]int64{"page_size": 20},
}

var queryTests = []struct {
	name, raw, want, bad string
}{
	{"empty", "", "", ""},
	{"allowed kept in order", "q=cat&page=2", "q=cat&page=2", ""},
	{"others dropped", "q=cat&api_key=x&page_size=20&mature=true", "q=cat&page_size=20", ""},
	{"over the cap", "q=cat&page_size=50", "", "page_size"},
	{"not a number", "page_size=twenty", "", "page_size"},
	{"negative", "page_size=-1", "", "page_size"},
	{"encoded name", "q=cat&page%5Fsize=50", "", "page_size"},
	{"encoded value kept as sent", "q=a%20b%26c", "q=a%20b%26c", ""},
	{"malformed escape dropped", "q=cat&%zz=1", "q=cat", ""},
	{"empty pairs", "&&q=cat&&", "q=cat", ""},
	{"repeated", "q=a&q=b", "q=a&q=b", ""},
	{"no value", "q", "q", ""},
	{"semicolon is not a separator", "q=a;page_size=99", "q=a;page_size=99", ""},
}

func TestQueryFilter(t *testing.T) {
	for _, tc := range queryTests {
		got, bad := openverseQuery.Filter(tc.raw)
		if got != tc.want || bad != tc.bad {
			t.Errorf("%s: Filter(%q) = %q, %q; want %q, %q", tc.name, tc.raw, got, bad, tc.want, tc.bad)
		}
	}
	drop := &QueryFilter{Allow: openverseQuery.Allow, Max: openverseQuery.Max, DropOverMax: true}
	if got, bad := drop.Filter("q=cat&page_size=50"); got != "q=cat" || bad != "" {
		t.Errorf("drop over max: %q %q", got, bad)
	}
	all := &QueryFilter{}
	if got, _ := all.Filter("anything=1&x"); got != "anything=1&x" {
		t.Errorf("no allow list: %q", got)
	}
}

// FuzzQueryFilter: the output only holds allowed names, and capped values
// within their cap, however the input is encoded.
func FuzzQueryFilter(f *testing.F) {
	for _, tc := range queryTests {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		out, bad := openverseQuery.Filter(raw)
		if bad != "" {
			return
		}
		vals, err := url.ParseQuery(out)
		if err != nil {
			return // url.ParseQuery rejects what we pass through verbatim (e.g. ';')
		}
		for k, vs := range vals {
			if !openverseQuery.Allow[k] {
				t.Fatalf("Filter(%q) = %q keeps %q", raw, out, k)
			}
			if k == "page_size" {
				for _, v := range vs {
					if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil || n < 0 || n > 20 {
						t.Fatalf("Filter(%q) = %q keeps page_size=%q", raw, out, v)
					}
				}
			}
		}
	})
}
