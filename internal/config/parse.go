package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/floodgate/floodgate/internal/httpsyntax"
	"github.com/floodgate/floodgate/ratelimit"
)

// A KeyKind is one characteristic a rule can count by.
type KeyKind uint8

// The key kinds, in the order of KeyForms.
const (
	KeyIP        KeyKind = iota + 1 // the client address, grouped by client_ip prefixes
	KeyPath                         // the request path
	KeyRoute                        // the matched route's name
	KeyMethod                       // the request method
	KeyHost                         // the Host header
	KeySession                      // the session id (none without a valid session)
	KeyAPIClient                    // the API client id
	KeyHeader                       // a request header's value; Arg is its canonical name
	KeyQuery                        // a query parameter's value; Arg is its name
	KeyExpr                         // a CEL expression's value; Arg is its source
)

var keyNames = [...]string{
	KeyIP:        "ip",
	KeyPath:      "path",
	KeyRoute:     "route",
	KeyMethod:    "method",
	KeyHost:      "host",
	KeySession:   "session",
	KeyAPIClient: "api_client",
	KeyHeader:    "header",
	KeyQuery:     "query",
	KeyExpr:      "expr",
}

// String returns the kind's name as written in a key, such as "header".
func (k KeyKind) String() string {
	if k > 0 && int(k) < len(keyNames) {
		return keyNames[k]
	}
	return "KeyKind(" + strconv.Itoa(int(k)) + ")"
}

// hasArg reports whether kind k is written "k:ARG".
func (k KeyKind) hasArg() bool { return k == KeyHeader || k == KeyQuery || k == KeyExpr }

// KeyForms lists the forms a key entry may take, for messages and docs.
func KeyForms() []string {
	return []string{"ip", "path", "route", "method", "host", "session", "api_client", "header:NAME", "query:NAME", "expr:CEL"}
}

// A KeyPart is one parsed entry of a rule's key.
type KeyPart struct {
	Kind KeyKind
	// Arg is the header name (canonical, such as "X-Api-Key"), query
	// parameter name or CEL source; empty for the other kinds.
	Arg string
}

// String formats p as ParseKey reads it.
func (p KeyPart) String() string {
	if p.Kind.hasArg() {
		return p.Kind.String() + ":" + p.Arg
	}
	return p.Kind.String()
}

// ParseKey parses one entry of a rule's key (see KeyForms): "ip", "path",
// "route", "method", "host", "session", "api_client", "header:NAME" (NAME
// an HTTP field name, canonicalised), "query:NAME" or "expr:CEL". The CEL
// source is not compiled here.
func ParseKey(s string) (KeyPart, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	for k := KeyIP; int(k) < len(keyNames); k++ {
		if kind != keyNames[k] {
			continue
		}
		switch {
		case !k.hasArg() && hasArg:
			return KeyPart{}, fmt.Errorf("key %q: %s takes no argument", s, kind)
		case k.hasArg() && !hasArg:
			return KeyPart{}, fmt.Errorf("key %q needs an argument: %s:NAME", s, kind)
		case k == KeyHeader:
			if !isToken(arg) {
				return KeyPart{}, fmt.Errorf("key %q: %q is not a header name%s", s, arg, spaceHint(kind, arg))
			}
			arg = textproto.CanonicalMIMEHeaderKey(arg)
		case k == KeyQuery:
			if arg == "" || !utf8.ValidString(arg) || strings.ContainsFunc(arg, unicode.IsControl) {
				return KeyPart{}, fmt.Errorf("key %q: %q is not a query parameter name", s, arg)
			}
		case k == KeyExpr:
			if arg = strings.TrimSpace(arg); arg == "" {
				return KeyPart{}, fmt.Errorf("key %q: the expression is empty", s)
			}
		}
		return KeyPart{Kind: k, Arg: arg}, nil
	}
	return KeyPart{}, fmt.Errorf("unknown key kind %q", kind)
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2), such as a
// header name or a method.
func isToken(s string) bool { return httpsyntax.IsToken(s) }

// A Pattern is a parsed route path.
type Pattern struct {
	// Segments are the path's segments after the leading "/"; none for
	// "/", which matches every path.
	Segments []Segment
	// TrailingSlash is set when the pattern ends in "/" after a segment,
	// as in "/api/".
	TrailingSlash bool
	// OptionalSlash, set from a route's trailing_slash: optional, lets a
	// path match with or without a "/" after the last segment, whatever
	// TrailingSlash says.
	OptionalSlash bool
}

// Slashes returns the number of "/" in every path the pattern matches, or
// -1 when that number varies ("/", and a pattern ending in
// "{name...}"): a router skips a pattern whose count a path does not
// have without looking at its segments.
func (p Pattern) Slashes() int {
	n := len(p.Segments)
	if n == 0 || p.Segments[n-1].Rest || p.OptionalSlash {
		return -1
	}
	if p.TrailingSlash {
		n++
	}
	return n
}

// ParsePrefix parses a route group's prefix: "/" followed by literal
// segments, with or without a final "/" ("/api/" and "/api" are the
// same). It returns the segments.
func ParsePrefix(s string) ([]string, error) {
	p, err := ParseRoutePattern(s)
	switch {
	case err != nil:
		return nil, err // "path …", the prefix being one
	case len(p.Segments) == 0:
		return nil, fmt.Errorf("prefix %q fences every path; name at least one segment, such as /api/", s)
	}
	segs := make([]string, len(p.Segments))
	for i, seg := range p.Segments {
		if seg.Param != "" {
			return nil, fmt.Errorf("prefix %q: segments must be literal, not {%s}", s, seg.Param)
		}
		segs[i] = seg.Literal
	}
	return segs, nil
}

// A Segment is one segment of a Pattern: a literal, or a parameter.
type Segment struct {
	// Literal is the segment's text when Param is empty.
	Literal string
	// Param is the parameter's name, for "{name}" and "{name...}".
	Param string
	// Rest marks "{name...}", which matches the rest of the path (one or
	// more segments); it can only be last.
	Rest bool
}

// Params lists p's parameter names in order.
func (p Pattern) Params() []string {
	var names []string
	for _, s := range p.Segments {
		if s.Param != "" {
			names = append(names, s.Param)
		}
	}
	return names
}

// String formats p as ParseRoutePattern reads it.
func (p Pattern) String() string {
	var b strings.Builder
	for _, s := range p.Segments {
		b.WriteByte('/')
		switch {
		case s.Rest:
			b.WriteString("{" + s.Param + "...}")
		case s.Param != "":
			b.WriteString("{" + s.Param + "}")
		default:
			b.WriteString(s.Literal)
		}
	}
	if p.TrailingSlash || len(p.Segments) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}

var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseRoutePattern parses a route path: "/" followed by segments
// separated by "/", each a literal or "{name}" (one segment), and last a
// "{name...}" (the rest of the path) if wanted. Parameter names are
// identifiers, unique in the pattern. Literals are written decoded: no
// "%", "?", "#", "{", "}", spaces or control characters, and no "." or
// ".." segments. "/" alone has no segments.
func ParseRoutePattern(s string) (Pattern, error) {
	if !strings.HasPrefix(s, "/") {
		return Pattern{}, fmt.Errorf("path %q must start with /", s)
	}
	var p Pattern
	if s == "/" {
		return p, nil
	}
	parts := strings.Split(s[1:], "/")
	if parts[len(parts)-1] == "" {
		p.TrailingSlash = true
		parts = parts[:len(parts)-1]
	}
	seen := map[string]bool{}
	for i, part := range parts {
		var seg Segment
		switch {
		case part == "":
			return Pattern{}, fmt.Errorf("path %q has an empty segment (//)", s)
		case part == "." || part == "..":
			return Pattern{}, fmt.Errorf("path %q has a %q segment", s, part)
		case strings.HasPrefix(part, "{") && strings.HasSuffix(part, "}"):
			name := part[1 : len(part)-1]
			if n, ok := strings.CutSuffix(name, "..."); ok {
				if i != len(parts)-1 || p.TrailingSlash {
					return Pattern{}, fmt.Errorf("path %q: {%s} must be the last segment", s, name)
				}
				name, seg.Rest = n, true
			}
			if !paramName.MatchString(name) {
				return Pattern{}, fmt.Errorf("path %q: parameter name %q must be letters, digits and _, not starting with a digit", s, name)
			}
			if seen[name] {
				return Pattern{}, fmt.Errorf("path %q: parameter {%s} appears twice", s, name)
			}
			seen[name] = true
			seg.Param = name
		case strings.ContainsAny(part, "{}"):
			return Pattern{}, fmt.Errorf("path %q: a parameter must be a whole segment, such as /{name}/", s)
		case strings.ContainsAny(part, "%?#") || strings.ContainsFunc(part, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) || !utf8.ValidString(part):
			return Pattern{}, fmt.Errorf("path %q: segment %q may not contain %%, ?, #, spaces or control characters (write it decoded)", s, part)
		default:
			seg.Literal = part
		}
		p.Segments = append(p.Segments, seg)
	}
	return p, nil
}

// A Template is a parsed route rewrite: literal text and parameters of
// the route's pattern, concatenated.
type Template struct {
	Parts []TemplatePart
}

// A TemplatePart is literal text, or a parameter when Param is not empty.
type TemplatePart struct {
	Literal string
	Param   string
}

// ParseRewrite parses a route's rewrite against its pattern p: a path
// starting with "/", where "{name}" (or "{name...}" for a rest parameter)
// is replaced by the value of p's parameter name, anywhere in the text,
// as in "/v1/{type}s/". Every parameter used must be in p.
func ParseRewrite(s string, p Pattern) (Template, error) {
	if !strings.HasPrefix(s, "/") {
		return Template{}, fmt.Errorf("rewrite %q must start with /", s)
	}
	if strings.ContainsAny(s, "?#") || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return Template{}, fmt.Errorf("rewrite %q may not contain ?, #, spaces or control characters", s)
	}
	rest := map[string]bool{}
	for _, seg := range p.Segments {
		if seg.Param != "" {
			rest[seg.Param] = seg.Rest
		}
	}
	var t Template
	for s := s; s != ""; {
		open := strings.IndexAny(s, "{}")
		if open < 0 {
			t.Parts = append(t.Parts, TemplatePart{Literal: s})
			break
		}
		if s[open] == '}' {
			return Template{}, errors.New(`rewrite has a "}" without "{"`)
		}
		if open > 0 {
			t.Parts = append(t.Parts, TemplatePart{Literal: s[:open]})
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return Template{}, errors.New(`rewrite has a "{" without "}"`)
		}
		name := s[open+1 : open+end]
		s = s[open+end+1:]
		n, dots := strings.CutSuffix(name, "...")
		isRest, ok := rest[n]
		switch {
		case !ok:
			params := p.Params()
			if len(params) == 0 {
				return Template{}, fmt.Errorf("rewrite uses {%s}, but the path has no parameters", name)
			}
			return Template{}, fmt.Errorf("rewrite uses {%s}, which is not a parameter of the path (it has %s)", name, strings.Join(params, ", "))
		case dots && !isRest:
			return Template{}, fmt.Errorf("rewrite uses {%s}, but {%s} in the path is one segment: write {%s}", name, n, n)
		}
		t.Parts = append(t.Parts, TemplatePart{Param: n})
	}
	return t, nil
}

// ParseRetryAfter parses a rule's retry_after: a duration of whole
// seconds as ParseDuration reads it ("300s", "5m", "1h30m", "1d") or a
// bare number of seconds ("300"), from 1s to 24h.
func ParseRetryAfter(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 1 || n > 86400 {
			return 0, fmt.Errorf("retry_after %q must be from 1 to 86400 seconds", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, ok := parseDuration(s)
	switch {
	case !ok:
		return 0, fmt.Errorf("retry_after %q is not a duration such as 300s or 5m, nor a number of seconds", s)
	case d%time.Second != 0:
		return 0, fmt.Errorf("retry_after %q is not a whole number of seconds", s)
	case d < time.Second || d > 24*time.Hour:
		return 0, fmt.Errorf("retry_after %q must be from 1s to 24h", s)
	}
	return d, nil
}

// ParseTrustedProxy parses one client_ip.trusted_proxies entry: a CIDR
// prefix ("10.0.0.0/8", "2001:db8::/32") or one address ("10.0.0.1"),
// which is its own /32 or /128. The result is masked, and IPv4-mapped
// IPv6 addresses are unmapped.
func ParseTrustedProxy(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR prefix such as 10.0.0.0/8", s)
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
	}
	if a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("%q: an address with a zone cannot be trusted", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ParseLimit parses one of a rule's limits, "N/WINDOW" ("1500/5m",
// "5000/1d", "100/m"), for algorithm alg, and checks that alg can enforce
// it: see ratelimit.ParseLimitAs.
func ParseLimit(s string, alg ratelimit.Algorithm) (ratelimit.Limit, error) {
	return ratelimit.ParseLimitAs(s, alg)
}

// languageTag matches the language tags of messages: a primary language
// and optional subtags, as in "en", "es", "pt-BR", "zh-Hant-TW".
var languageTag = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$`)

var listenHost = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)

// checkListen reports whether s is host:port, host empty, an IP address
// or a host name, and port 0 to 65535.
func checkListen(s string) error {
	host, port, err := splitHostPort(s)
	if err != nil {
		return err
	}
	if host != "" && !listenHost.MatchString(host) {
		if _, err := netip.ParseAddr(host); err != nil {
			return fmt.Errorf("%q is not an IP address or host name", host)
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 || len(port) > 5 {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}

func splitHostPort(s string) (host, port string, err error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", errors.New("missing port")
	}
	host, port = s[:i], s[i+1:]
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", "", fmt.Errorf("%q is not an IPv6 address", host)
		}
	} else if strings.Contains(host, ":") {
		return "", "", errors.New("an IPv6 address must be in brackets, as [::1]:8080")
	}
	return host, port, nil
}

// sortedKeys returns m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Ranges of the duration settings, which Validate checks: a timeout
// (server.*_timeout, server.shutdown_grace, store.timeout, upstream and
// route timeouts, reload.settle) is from MinTimeout to MaxTimeout;
// sessions.max_age from 1s to MaxSessionMaxAge, the longest browsers keep
// a cookie (RFC 6265bis caps Max-Age at 400 days); sessions.per_ip.window
// and a rule's ban from 1s to ratelimit.MaxWindow (366d), as a rule's
// windows.
const (
	MinTimeout       = time.Millisecond
	MaxTimeout       = time.Hour
	MaxSessionMaxAge = 400 * 24 * time.Hour
)

// ParseDuration parses a duration setting, written as a rule's windows
// are: a Go duration ("10s", "1h30m", "250ms") or a whole number of days
// ("1d", "30d"); then checks that it is from lo to hi. The errors name
// the value and the range.
func ParseDuration(s string, lo, hi time.Duration) (time.Duration, error) {
	d, ok := parseDuration(s)
	switch {
	case !ok:
		return 0, fmt.Errorf("%q is not a duration such as 10s, 5m, 1h or 1d", s)
	case d < lo || d > hi:
		return 0, fmt.Errorf("%q must be from %s to %s", s, ratelimit.FormatWindow(lo), ratelimit.FormatWindow(hi))
	}
	return d, nil
}

// parseDuration reads ParseDuration's syntax. A number of days too large
// for a time.Duration is the largest one, out of every range.
func parseDuration(s string) (time.Duration, bool) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		switch {
		case errors.Is(err, strconv.ErrRange) && days[0] != '-', err == nil && n > math.MaxInt64/int64(24*time.Hour):
			return math.MaxInt64, true
		case errors.Is(err, strconv.ErrRange), err == nil && n < math.MinInt64/int64(24*time.Hour):
			return math.MinInt64, true
		case err != nil:
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// ParseTimeout parses a duration setting that Validate has checked
// (a timeout, sessions.max_age or sessions.per_ip.window), for the stages
// that read the values: ParseDuration from MinTimeout to the longest any
// of those settings may be. Validate holds each to its own range, a
// timeout to MaxTimeout.
func ParseTimeout(s string) (time.Duration, error) {
	return ParseDuration(s, MinTimeout, MaxSessionMaxAge)
}

// Costs a rule may count (Rule.Cost).
const (
	CostRequests        = "requests"
	CostUpstreamSeconds = "upstream_seconds"
	CostResponseBytes   = "response_bytes"
	CostHeader          = "header"
)

// CostForms lists the forms Rule.Cost may take, for messages and docs.
func CostForms() []string {
	return []string{CostRequests, CostUpstreamSeconds, CostResponseBytes, "header:NAME"}
}

// spaceHint is what to write instead of prefix:name when only the
// blanks around name keep it from being a header name ("header: X-A").
func spaceHint(prefix, name string) string {
	if t := strings.TrimSpace(name); t != name && isToken(t) {
		return fmt.Sprintf(": write it without blanks, %q", prefix+":"+t)
	}
	return ""
}

// ParseCost parses a rule's cost: requests, upstream_seconds,
// response_bytes or header:NAME (the header name is canonicalised).
func ParseCost(s string) (kind, header string, err error) {
	switch s {
	case "", CostRequests:
		return CostRequests, "", nil
	case CostUpstreamSeconds, CostResponseBytes:
		return s, "", nil
	}
	if name, ok := strings.CutPrefix(s, CostHeader+":"); ok {
		if !isToken(name) {
			return "", "", fmt.Errorf("cost %q: %q is not a header name%s", s, name, spaceHint(CostHeader, name))
		}
		return CostHeader, textproto.CanonicalMIMEHeaderKey(name), nil
	}
	return "", "", fmt.Errorf("unknown cost %q", s)
}

// ParseBan parses a rule's ban duration (see ParseDuration), from 1s to
// 366d (ratelimit.MaxWindow).
func ParseBan(s string) (time.Duration, error) {
	d, err := ParseDuration(s, time.Second, ratelimit.MaxWindow)
	if err != nil {
		return 0, fmt.Errorf("ban %v", err)
	}
	return d, nil
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ParamMatcher compiles a route parameter's constraint: "uuid", "int" (a
// non-negative decimal integer), or a regular expression (RE2) that the
// whole segment must match.
func ParamMatcher(s string) (func(string) bool, error) {
	switch s {
	case "uuid":
		return uuidPattern.MatchString, nil
	case "int":
		return func(v string) bool {
			if v == "" || len(v) > 18 {
				return false
			}
			for i := 0; i < len(v); i++ {
				if v[i] < '0' || v[i] > '9' {
					return false
				}
			}
			return true
		}, nil
	case "":
		return nil, errors.New("the constraint is empty")
	}
	re, err := regexp.Compile("^(?:" + s + ")$")
	if err != nil {
		return nil, fmt.Errorf("%q is not uuid, int or a regular expression: %v", s, err)
	}
	return re.MatchString, nil
}
