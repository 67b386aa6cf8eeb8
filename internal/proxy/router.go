// Package proxy maps request paths to named upstreams (routes) and forwards
// requests to them over pooled keep-alive connections.
package proxy

import (
	"strings"

	"github.com/floodgate/floodgate/internal/config"
)

// Params holds the values of a match's named segments. Its zero value is
// empty; Match fills it without allocating for up to eight parameters.
type Params struct {
	n      int
	names  [8]string
	values [8]string
	more   map[string]string
}

// Get returns the value of the parameter name, or "".
func (p *Params) Get(name string) string {
	for i := 0; i < p.n && i < len(p.names); i++ {
		if p.names[i] == name {
			return p.values[i]
		}
	}
	return p.more[name]
}

func (p *Params) set(name, value string) {
	if p.n < len(p.names) {
		p.names[p.n], p.values[p.n] = name, value
	} else {
		if p.more == nil {
			p.more = map[string]string{}
		}
		p.more[name] = value
	}
	p.n++
}

// Match reports whether the cleaned absolute path matches pattern pt (see
// config.ParseRoutePattern), recording parameter values in p: "/" matches
// every path; a literal matches itself; "{name}" one non-empty segment;
// "{name...}" the rest of the path, one or more segments; a pattern with a
// trailing slash requires one, and one with OptionalSlash takes a path
// with or without one.
func Match(pt config.Pattern, path string, p *Params) bool {
	p.n = 0
	if len(pt.Segments) == 0 {
		return true
	}
	rest := path[1:]
	for i, s := range pt.Segments {
		if s.Rest {
			if rest == "" {
				return false
			}
			p.set(s.Param, rest)
			return true
		}
		seg, tail, more := strings.Cut(rest, "/")
		if s.Param != "" {
			if seg == "" {
				return false
			}
			p.set(s.Param, seg)
		} else if seg != s.Literal {
			return false
		}
		last := i == len(pt.Segments)-1
		switch {
		case last && pt.OptionalSlash:
			return !more || tail == ""
		case last && pt.TrailingSlash:
			return more && tail == ""
		case last:
			return !more
		case !more:
			return false
		}
		rest = tail
	}
	return false
}

// Expand renders the route's rewrite with the match's parameters, mapped
// through Values where the route has them.
func (r *Route) Expand(p *Params) string {
	var b strings.Builder
	for _, part := range r.Rewrite.Parts {
		if part.Param != "" {
			v := p.Get(part.Param)
			if vals, ok := r.Values[part.Param]; ok {
				v = vals[v]
			}
			b.WriteString(v)
		} else {
			b.WriteString(part.Literal)
		}
	}
	return b.String()
}
