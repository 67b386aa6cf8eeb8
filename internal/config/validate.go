package config

import (
	"fmt"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/redisstore"
)

// Closed sets of values, as listed in problems.
var (
	modes           = []string{ModeEnforce, ModeLogOnly}
	actions         = []string{ActionBlock, ActionDeny, ActionCount, ActionAllow}
	forwardHeaders  = []string{HeaderXForwardedFor, HeaderForwarded}
	failurePolicies = []string{FailOpen, FailClosed}
	// Engines are the values of server.engine.
	Engines          = []string{EngineFloodgate, EngineNetHTTP}
	rateLimitHeaders = []string{RateLimitHeadersAlways, RateLimitHeadersLimited, RateLimitHeadersNever}
	logLevels        = []string{"debug", "info", "warn", "error"}
	logDecisions     = []string{LogDecisionsLimited, LogDecisionsAll, LogDecisionsNone}
)

// Bounds of numeric fields.
const (
	MinIPv4Prefix, MaxIPv4Prefix = 8, 32
	MinIPv6Prefix, MaxIPv6Prefix = 16, 128
	MinMaxKeys, MaxMaxKeys       = 1 << 10, 1 << 28
	MaxTrustedHops               = 32
)

var (
	upstreamName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	routeName    = upstreamName
	ruleName     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
)

// Validate checks f.Config, with its defaults applied (to a copy), and
// returns every problem, each at its field's line. The defaults fill only
// what the file leaves out: a 0 or "" the file writes is checked as
// written ("max_body_bytes: 0" is out of range, never the default), even
// when the caller applied the defaults to f.Config before. It does no I/O. Fields
// that already had a problem when the file was loaded are not checked
// again, so that one mistake is reported once. CEL conditions and key
// expressions are not compiled here.
func (f *File) Validate() Problems {
	c := f.Config.clone()
	c.ApplyDefaults()
	f.keepWrittenZeros(&c)
	v := &validator{f: f, c: &c}
	v.top()
	v.clientIP()
	v.store()
	v.upstreams()
	v.routes()
	v.routeGroups()
	v.rules()
	v.responses()
	v.internal()
	v.decide()
	v.sessions()
	v.apiClients()
	return v.problems
}

// keepWrittenZeros sets back to zero, in c (a copy of f.Config with its
// defaults applied), every field that the file writes as 0 or "" and that
// only the defaults changed since. A field a caller set after loading (a
// command-line flag) keeps the caller's value.
func (f *File) keepWrittenZeros(c *Config) {
	defaulted := f.written.clone()
	defaulted.ApplyDefaults()
	f.keepZeros(reflect.ValueOf(c).Elem(), reflect.ValueOf(&f.written).Elem(), reflect.ValueOf(&defaulted).Elem(), "")
}

// keepZeros walks c, written and defaulted (values of one type) together;
// path is their field path.
func (f *File) keepZeros(c, written, defaulted reflect.Value, path string) {
	if implementsUnmarshaler(c.Type()) {
		return // lists and mappings of their own; no defaults inside
	}
	switch c.Kind() {
	case reflect.Struct:
		for name, sf := range yamlFields(c.Type()) {
			f.keepZeros(c.FieldByIndex(sf.Index), written.FieldByIndex(sf.Index), defaulted.FieldByIndex(sf.Index), joinKey(path, name))
		}
	case reflect.Slice:
		for i := range min(c.Len(), written.Len(), defaulted.Len()) {
			f.keepZeros(c.Index(i), written.Index(i), defaulted.Index(i), indexPath(path, i))
		}
	case reflect.Map:
		for it := written.MapRange(); it.Next(); {
			k := it.Key()
			cv, dv := c.MapIndex(k), defaulted.MapIndex(k)
			if !cv.IsValid() || !dv.IsValid() {
				continue
			}
			e := reflect.New(cv.Type()).Elem() // map values cannot be set in place
			e.Set(cv)
			f.keepZeros(e, it.Value(), dv, joinKey(path, k.String()))
			c.SetMapIndex(k, e)
		}
	case reflect.String, reflect.Int, reflect.Int64:
		if written.IsZero() && !c.IsZero() && c.Equal(defaulted) && f.Has(path) {
			c.SetZero()
		}
	}
}

type validator struct {
	f        *File
	c        *Config // with defaults applied
	problems Problems
}

func (v *validator) add(path, msg string, allowed ...string) {
	if v.f.Reported(path) {
		return
	}
	v.problems = append(v.problems, v.f.Problem(path, msg, allowed...))
}

// oneOf checks that the value at path is in allowed.
// set reports whether a string field, at path, has a value to check: one
// that is not empty, or the empty string the file writes ("" is a value,
// never the default's; a key left out, ~ or a variable that expands to
// nothing is).
func (v *validator) set(path, value string) bool {
	return value != "" || v.f.Has(path)
}

func (v *validator) oneOf(path, what, value string, allowed []string) {
	if !slices.Contains(allowed, value) {
		v.add(path, fmt.Sprintf("unknown %s %q", what, value), allowed...)
	}
}

// intRange checks that n, at path, is from lo to hi; a zero n that the
// file does not set is the default's business.
func (v *validator) intRange(path string, n, lo, hi int) {
	if (n != 0 || v.f.Has(path)) && (n < lo || n > hi) {
		v.add(path, fmt.Sprintf("%d is out of range: must be from %d to %d", n, lo, hi))
	}
}

// int64Range is intRange for byte counts.
func (v *validator) int64Range(path string, n, lo, hi int64) {
	if (n != 0 || v.f.Has(path)) && (n < lo || n > hi) {
		v.add(path, fmt.Sprintf("%d is out of range: must be from %d to %d", n, lo, hi))
	}
}

// Bounds of the size settings.
const (
	MaxMaxBodyBytes       = 1 << 40
	MinMaxURIBytes        = 256
	MaxMaxURIBytes        = 64 << 10
	MinRequestBufferBytes = 4 << 10
	MaxRequestBufferBytes = 1 << 30
)

// ListenProblem returns what is wrong with addr as the address of the
// listener at field: "listen", "admin.listen" (which may be "off") or
// "internal.listen" (which may be "off" or unix:/path); "" when nothing
// is. Validate reports it at the field, and `serve` at the flag that
// overrides the field. Whether two listeners share an address is
// SharedListen's.
func ListenProblem(field, addr string) string {
	switch field {
	case "admin.listen":
		if addr == ListenOff {
			return ""
		}
		if err := checkListen(addr); err != nil {
			return fmt.Sprintf("%q is not host:port (%v), such as 127.0.0.1:9090, nor \"off\"", addr, err)
		}
	case "internal.listen":
		if addr == ListenOff || unixListenRe.MatchString(addr) {
			return ""
		}
		if err := checkListen(addr); err != nil {
			return fmt.Sprintf("%q is neither host:port (%v) nor unix:/path/to.sock", addr, err)
		}
	default:
		if err := checkListen(addr); err != nil {
			return fmt.Sprintf("%q is not host:port (%v), such as 127.0.0.1:8080 or :8080", addr, err)
		}
	}
	return ""
}

// listenFields are the fields of the listeners that take an address, in
// the order SharedListen compares them.
var listenFields = []string{"listen", "admin.listen", "internal.listen", "decide.listen"}

// ListenerName returns the name of the listener at field in messages:
// public, admin, internal or decision.
func ListenerName(field string) string {
	return listenerNames[field]
}

var listenerNames = map[string]string{
	"listen": "public", "admin.listen": "admin", "internal.listen": "internal", "decide.listen": "decision",
}

// SharedListen returns the field of the first listener before the one at
// field (in the order listen, admin.listen, internal.listen,
// decide.listen) to which c gives field's address, and the problem
// Validate reports at field for it, naming that listener; "", "" when
// none has it. A listener switched off, a unix socket and a port of the
// system's choice (":0") share nothing. Which of the two is wrong is the
// caller's to say: `serve` names the flag that gave either.
func SharedListen(c *Config, field string) (other, problem string) {
	addr := listenAddr(c, field)
	if addr == "" {
		return "", ""
	}
	for _, o := range listenFields {
		if o == field {
			break
		}
		if listenAddr(c, o) == addr {
			return o, fmt.Sprintf("%q is also the %s listen address", addr, ListenerName(o))
		}
	}
	return "", ""
}

// listenAddr returns the address of the listener at field that no other
// may have: "" when it is off, a unix socket or a port of the system's
// choice.
func listenAddr(c *Config, field string) string {
	var addr string
	switch field {
	case "listen":
		addr = c.Listen
	case "admin.listen":
		addr = c.Admin.Listen
	case "internal.listen":
		addr = c.Internal.Listen
	case "decide.listen":
		addr = c.Decide.Listen
	}
	if addr == "" || addr == ListenOff || strings.HasSuffix(addr, ":0") || unixListenRe.MatchString(addr) {
		return ""
	}
	return addr
}

func (v *validator) top() {
	v.oneOf("mode", "mode", v.c.Mode, modes)
	if problem := ListenProblem("listen", v.c.Listen); problem != "" {
		v.add("listen", problem)
	}
	if problem := ListenProblem("admin.listen", v.c.Admin.Listen); problem != "" {
		v.add("admin.listen", problem)
	} else if _, problem := SharedListen(v.c, "admin.listen"); problem != "" {
		v.add("admin.listen", problem)
	}
	if t := v.c.Admin.Token; t != "" && len(t) < 16 {
		v.add("admin.token", "the token is too short to be a secret: use at least 16 characters (such as the output of `openssl rand -hex 16`)")
	}
	for _, d := range []struct{ path, val string }{
		{"server.read_header_timeout", v.c.Server.ReadHeaderTimeout},
		{"server.idle_timeout", v.c.Server.IdleTimeout},
		{"server.shutdown_grace", v.c.Server.ShutdownGrace},
		{"server.body_read_timeout", v.c.Server.BodyReadTimeout},
		{"server.write_idle_timeout", v.c.Server.WriteIdleTimeout},
		{"reload.settle", v.c.Reload.Settle},
	} {
		if _, err := ParseDuration(d.val, MinTimeout, MaxTimeout); err != nil {
			v.add(d.path, err.Error())
		}
	}
	v.oneOf("server.engine", "server engine", v.c.Server.Engine, Engines)
	sv := v.c.Server
	v.intRange("server.max_header_bytes", sv.MaxHeaderBytes, 1<<10, 1<<20)
	v.int64Range("server.max_body_bytes", sv.MaxBodyBytes, 1, MaxMaxBodyBytes)
	v.intRange("server.max_uri_bytes", sv.MaxURIBytes, MinMaxURIBytes, MaxMaxURIBytes)
	v.intRange("server.max_connections", sv.MaxConnections, 0, 10000000)
	v.int64Range("server.request_buffer_bytes", sv.RequestBufferBytes, MinRequestBufferBytes, MaxRequestBufferBytes)
	if (v.c.TLS.CertFile == "") != (v.c.TLS.KeyFile == "") {
		v.add("tls", "set both cert_file and key_file, or neither")
	}
	v.oneOf("log.level", "log level", v.c.Log.Level, logLevels)
	v.oneOf("log.decisions", "log.decisions value", v.c.Log.Decisions, logDecisions)
	v.oneOf("log.access", "log.access value", v.c.Log.Access, []string{"none", "stdout", "stderr"})
}

func (v *validator) clientIP() {
	ci := v.c.ClientIP
	for i, p := range ci.TrustedProxies {
		if _, err := ParseTrustedProxy(p); err != nil {
			v.add(indexPath("client_ip.trusted_proxies", i), err.Error())
		}
	}
	switch {
	case ci.TrustedHops < 0 || ci.TrustedHops > MaxTrustedHops:
		v.add("client_ip.trusted_hops", fmt.Sprintf("%d is out of range: must be from 0 to %d", ci.TrustedHops, MaxTrustedHops))
	case ci.TrustedHops > 0 && len(ci.TrustedProxies) > 0:
		v.add("client_ip.trusted_hops", "cannot be used together with trusted_proxies: trust proxies by address or by count, not both")
	}
	v.oneOf("client_ip.header", "forwarding header", ci.Header, forwardHeaders)
	v.intRange("client_ip.ipv4_prefix", ci.IPv4Prefix, MinIPv4Prefix, MaxIPv4Prefix)
	v.intRange("client_ip.ipv6_prefix", ci.IPv6Prefix, MinIPv6Prefix, MaxIPv6Prefix)
}

// StoreURLForms are the forms of store.url (and serve --store), as a
// problem with one lists them.
var StoreURLForms = []string{StoreMemory, "redis://host:port[/db]", "rediss://host:port", "redis://host1:port1,host2:port2,…", "valkey://…", "valkeys://…"}

// CheckStoreURL returns what is wrong with u as a store URL, "" when
// nothing is. The problem does not repeat the URL, which may hold a
// password.
func CheckStoreURL(u string) string {
	if u == StoreMemory {
		return ""
	}
	if _, err := redisstore.ParseURL(u); err != nil {
		// The field names the URL already: the package's prefix
		// would only repeat it in the store's terms.
		return strings.TrimPrefix(strings.TrimPrefix(err.Error(), "redisstore: "), "url: ")
	}
	return ""
}

func (v *validator) store() {
	if problem := CheckStoreURL(v.c.Store.URL); problem != "" {
		v.add("store.url", problem, StoreURLForms...)
	}
	if _, err := ParseDuration(v.c.Store.Timeout, MinTimeout, MaxTimeout); err != nil {
		v.add("store.timeout", err.Error())
	}
	v.oneOf("store.failure_policy", "failure policy", v.c.Store.FailurePolicy, failurePolicies)
	v.intRange("store.max_keys", v.c.Store.MaxKeys, MinMaxKeys, MaxMaxKeys)
}

func (v *validator) upstreams() {
	if len(v.c.Upstreams) == 0 {
		v.add("upstreams", "at least one upstream is required, such as upstreams: {api: {url: http://127.0.0.1:8081}}")
		return
	}
	for _, name := range sortedKeys(v.c.Upstreams) {
		path := joinKey("upstreams", name)
		if !upstreamName.MatchString(name) {
			v.add(path, fmt.Sprintf("upstream name %q must be lower-case letters, digits, _ and -, starting with a letter or digit", name))
		}
		if msg := checkUpstreamURL(v.c.Upstreams[name].URL); msg != "" {
			v.add(joinKey(path, "url"), msg)
		}
		v.timeouts(joinKey(path, "timeouts"), v.c.Upstreams[name].Timeouts)
		v.upstreamAuth(name, v.c.Upstreams[name])
		if r := v.c.Upstreams[name].ConnectionReuse; v.set(joinKey(path, "connection_reuse"), r) {
			v.oneOf(joinKey(path, "connection_reuse"), "connection reuse mode", r, []string{ReuseShared, ReusePerClient, ReuseNone})
		}
	}
}

func (v *validator) timeouts(path string, t Timeouts) {
	for _, d := range []struct{ field, val string }{
		{"connect", t.Connect}, {"response_header", t.ResponseHeader}, {"total", t.Total},
	} {
		if !v.set(joinKey(path, d.field), d.val) {
			continue
		}
		if _, err := ParseDuration(d.val, MinTimeout, MaxTimeout); err != nil {
			v.add(joinKey(path, d.field), err.Error())
		}
	}
}

// checkRewriteValue checks a value a parameter mapping puts in a rewritten
// path: one segment, nothing that changes the path's meaning.
func checkRewriteValue(s string) string {
	switch {
	case s == "":
		return "a rewrite value may not be empty"
	case s == "." || s == "..":
		return fmt.Sprintf("%q is a dot segment", s)
	case strings.ContainsAny(s, "/?#%\\") || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Sprintf("rewrite value %q must be one path segment without /, ?, #, %%, \\, spaces or control characters", s)
	}
	return ""
}

func checkUpstreamURL(s string) string {
	if s == "" {
		return "url is required, such as http://127.0.0.1:8081"
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Sprintf("%q is not a URL", s)
	case u.User != nil:
		return fmt.Sprintf("%q has credentials in it; floodgate does not send URL credentials", u.Redacted())
	case !strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https"):
		return fmt.Sprintf("%q must be an absolute http:// or https:// URL", s)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Sprintf("%q has no host", s)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Sprintf("%q may not have a query", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Sprintf("%q may not have a fragment", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("%q has an invalid port", s)
		}
	}
	return ""
}

func (v *validator) routes() {
	if len(v.c.Routes) == 0 && len(v.c.Upstreams) > 1 {
		// Which upstream a path goes to cannot be guessed: with none of
		// its routes, floodgate would answer every request 404.
		ups := sortedKeys(v.c.Upstreams)
		path := "upstreams"
		if v.f.Has("routes") {
			path = "routes" // routes: []
		}
		v.add(path, fmt.Sprintf("upstreams %s and %s, but no routes: only a lone upstream gets a default route, so every request would be answered 404; add routes, such as routes: [{name: %s, path: \"/%s/{rest...}\", upstream: %s}, {name: %s, path: /, upstream: %s}]",
			strings.Join(ups[:len(ups)-1], ", "), ups[len(ups)-1], ups[0], ups[0], ups[0], ups[1], ups[1]))
	}
	names := map[string]int{}
	seen := map[string]int{} // pattern+methods → route index
	catchAll := -1
	upstreams := sortedKeys(v.c.Upstreams)
	for i, r := range v.c.Routes {
		path := indexPath("routes", i)
		if pt, err := ParseRoutePattern(r.Path); err == nil {
			for _, name := range sortedKeys(r.Params) {
				if !slices.Contains(pt.Params(), name) {
					v.add(joinKey(joinKey(path, "params"), name), fmt.Sprintf("%q is not a parameter of path %s", name, r.Path), pt.Params()...)
					continue
				}
				pp := joinKey(joinKey(path, "params"), name)
				if vals := r.Params[name].Values(); vals != nil {
					for _, val := range sortedKeys(vals) {
						if msg := checkRewriteValue(vals[val]); msg != "" {
							v.add(joinKey(pp, val), msg)
						}
					}
					continue
				}
				if _, err := ParamMatcher(r.Params[name].Constraint()); err != nil {
					v.add(pp, err.Error(), "uuid", "int", "a regular expression", "a mapping from value to rewrite value")
				}
			}
		}
		for _, name := range sortedKeys(r.Query.Max) {
			if r.Query.Max[name] < 0 {
				v.add(joinKey(joinKey(joinKey(path, "query"), "max"), name), "a cap must be 0 or more")
			}
		}
		if v.set(joinKey(joinKey(path, "query"), "over_max"), r.Query.OverMax) {
			v.oneOf(joinKey(joinKey(path, "query"), "over_max"), "over_max value", r.Query.OverMax, []string{"reject", "drop"})
		}
		if v.set(joinKey(path, "trailing_slash"), r.TrailingSlash) {
			v.oneOf(joinKey(path, "trailing_slash"), "trailing_slash value", r.TrailingSlash, []string{"exact", "optional"})
			if pt, err := ParseRoutePattern(r.Path); err == nil && r.TrailingSlash == "optional" && (len(pt.Segments) == 0 || pt.Segments[len(pt.Segments)-1].Rest) {
				v.add(joinKey(path, "trailing_slash"), fmt.Sprintf("optional has no effect on path %s, which matches any ending", r.Path))
			}
		}
		v.timeouts(joinKey(path, "timeouts"), r.Timeouts)
		v.intRange(joinKey(path, "max_inflight"), r.MaxInflight, 0, 1000000)
		v.int64Range(joinKey(path, "max_body_bytes"), r.MaxBodyBytes, 1, MaxMaxBodyBytes)
		if v.set(joinKey(path, "request_buffering"), r.RequestBuffering) {
			v.oneOf(joinKey(path, "request_buffering"), "request_buffering value", r.RequestBuffering, []string{BufferingOn, BufferingOff})
		}
		if (r.TimeoutStatus != 0 || v.f.Has(joinKey(path, "timeout_status"))) && r.TimeoutStatus != 503 && r.TimeoutStatus != 504 {
			v.add(joinKey(path, "timeout_status"), fmt.Sprintf("%d is not a timeout status", r.TimeoutStatus), "503", "504")
		}
		if v.set(joinKey(path, "retry_after"), r.RetryAfter) {
			if _, err := ParseRetryAfter(r.RetryAfter); err != nil {
				v.add(joinKey(path, "retry_after"), err.Error())
			}
		}
		switch j, dup := names[r.Name]; {
		case r.Name == "":
			v.add(joinKey(path, "name"), "a route needs a name")
		case !routeName.MatchString(r.Name):
			v.add(joinKey(path, "name"), fmt.Sprintf("route name %q must be lower-case letters, digits, _ and -, starting with a letter or digit", r.Name))
		case dup:
			v.add(joinKey(path, "name"), fmt.Sprintf("route name %q is already used by routes[%d]", r.Name, j))
		default:
			names[r.Name] = i
		}
		if r.Group != "" && !routeName.MatchString(r.Group) {
			v.add(joinKey(path, "group"), fmt.Sprintf("route group %q must be lower-case letters, digits, _ and -, starting with a letter or digit", r.Group))
		}
		for j, m := range r.Methods {
			if !isToken(m) {
				v.add(indexPath(joinKey(path, "methods"), j), fmt.Sprintf("%q is not a method name", m))
			} else if slices.Index(r.Methods, m) < j {
				v.add(indexPath(joinKey(path, "methods"), j), fmt.Sprintf("method %s is listed twice", m))
			}
		}
		switch {
		case r.Upstream == "":
			v.add(joinKey(path, "upstream"), "a route needs an upstream", upstreams...)
		case v.c.Upstreams != nil && !hasKey(v.c.Upstreams, r.Upstream):
			v.add(joinKey(path, "upstream"), fmt.Sprintf("no upstream named %q", r.Upstream), upstreams...)
		}
		if r.Path == "" {
			v.add(joinKey(path, "path"), "a route needs a path, such as / or /api/{rest...}")
			continue
		}
		p, err := ParseRoutePattern(r.Path)
		if err != nil {
			v.add(joinKey(path, "path"), err.Error())
			continue
		}
		if r.Rewrite != "" {
			if _, err := ParseRewrite(r.Rewrite, p); err != nil {
				v.add(joinKey(path, "rewrite"), err.Error())
			}
		}
		// Shadowed routes: first match wins.
		shape := shapeOf(p) + " " + strings.Join(sortedCopy(r.Methods), ",")
		switch j, dup := seen[shape]; {
		case catchAll >= 0:
			v.add(joinKey(path, "path"), fmt.Sprintf("never matches: routes[%d] (path %s, all methods) matches every request first", catchAll, v.c.Routes[catchAll].Path))
		case dup:
			v.add(joinKey(path, "path"), fmt.Sprintf("never matches: routes[%d] has the same path and methods and comes first", j))
		default:
			seen[shape] = i
		}
		if len(r.Methods) == 0 && (len(p.Segments) == 0 || len(p.Segments) == 1 && p.Segments[0].Rest) && catchAll < 0 {
			catchAll = i
		}
	}
}

// routeGroups checks route_groups: each names a group of routes and
// fences a prefix of its own, and no route of another group lies wholly
// under a prefix (it could never match).
func (v *validator) routeGroups() {
	groups := map[string]bool{}
	for _, r := range v.c.Routes {
		if r.Group != "" {
			groups[r.Group] = true
		}
	}
	prefixes := map[string]string{} // folded prefix → group
	fences := map[string][]string{}
	for _, name := range sortedKeys(v.c.RouteGroups) {
		path := joinKey("route_groups", name)
		if !groups[name] {
			v.add(path, fmt.Sprintf("no route is in group %q: every path under its prefix would be answered 404", name), sortedKeys(groups)...)
		}
		if v.c.RouteGroups[name].Prefix == "" {
			v.add(joinKey(path, "prefix"), "a route group needs a prefix, such as /api/")
			continue
		}
		segs, err := ParsePrefix(v.c.RouteGroups[name].Prefix)
		if err != nil {
			v.add(joinKey(path, "prefix"), err.Error())
			continue
		}
		folded := strings.ToLower(strings.Join(segs, "/"))
		if other, dup := prefixes[folded]; dup {
			v.add(joinKey(path, "prefix"), fmt.Sprintf("prefix %s is route_groups.%s's too", v.c.RouteGroups[name].Prefix, other))
			continue
		}
		prefixes[folded] = name
		fences[name] = segs
	}
	for i, r := range v.c.Routes {
		pt, err := ParseRoutePattern(r.Path)
		if err != nil {
			continue
		}
		for _, name := range sortedKeys(fences) {
			if r.Group != name && underPrefix(pt, fences[name]) {
				v.add(joinKey(indexPath("routes", i), "group"), fmt.Sprintf("never matches: path %s is under route_groups.%s.prefix %s, which only routes of group %s take", r.Path, name, v.c.RouteGroups[name].Prefix, name))
			}
		}
	}
}

// underPrefix reports whether every path pt matches starts with the
// segments of prefix.
func underPrefix(pt Pattern, prefix []string) bool {
	if len(pt.Segments) < len(prefix) {
		return false
	}
	for i, seg := range prefix {
		if pt.Segments[i].Literal == "" || !strings.EqualFold(pt.Segments[i].Literal, seg) {
			return false
		}
	}
	return true
}

// shapeOf returns p with parameter names erased, so that patterns that
// match the same paths compare equal.
func shapeOf(p Pattern) string {
	q := Pattern{Segments: slices.Clone(p.Segments), TrailingSlash: p.TrailingSlash}
	for i := range q.Segments {
		if q.Segments[i].Param != "" {
			q.Segments[i].Param = "_"
		}
	}
	return q.String()
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

func (v *validator) rules() {
	names := map[string]int{}
	for i, r := range v.c.Rules {
		path := indexPath("rules", i)
		at := func(field string) string { return joinKey(path, field) }
		switch j, dup := names[r.Name]; {
		case r.Name == "":
			v.add(at("name"), "a rule needs a name")
		case !ruleName.MatchString(r.Name):
			v.add(at("name"), fmt.Sprintf("rule name %q must be 1 to 64 lower-case letters, digits, ., _ and -, starting with a letter or digit", r.Name))
		case dup:
			v.add(at("name"), fmt.Sprintf("rule name %q is already used by rules[%d]", r.Name, j))
		default:
			names[r.Name] = i
		}
		if strings.TrimSpace(r.When) == "" {
			v.add(at("when"), `the condition is blank; leave "when" out to match every request`)
		}
		v.oneOf(at("action"), "action", r.Action, actions)

		counts := r.Action == ActionBlock || r.Action == ActionCount
		if r.Action == ActionDeny || r.Action == ActionAllow {
			for _, field := range []struct {
				name string
				set  bool
				why  string
			}{
				{"key", len(r.Key) > 0, "counts nothing"},
				{"limits", len(r.Limits) > 0, "counts nothing"},
				{"algorithm", r.Algorithm != "", "counts nothing"},
				{"retry_after", r.RetryAfter != "", "counts nothing"},
				{"message", r.Action == ActionAllow && len(r.Message) > 0, "never answers"},
			} {
				if field.set {
					v.add(at(field.name), fmt.Sprintf("has no meaning for action %s, which %s: remove it, or use action block or count", r.Action, field.why))
				}
			}
		}
		caps := r.MaxInflight > 0 || r.MaxInflightPerKey > 0
		if r.LimitsFrom != "" {
			v.oneOf(at("limits_from"), "limits_from value", r.LimitsFrom, limitsFroms)
			switch {
			case !counts:
				v.add(at("limits_from"), fmt.Sprintf("has no meaning for action %s: use action block or count", r.Action))
			case len(r.Limits) > 0:
				v.add(at("limits"), "a rule takes its limits from limits or from limits_from, not both")
			case len(v.c.APIClients.Plans) == 0:
				v.add(at("limits_from"), "limits_from: plan needs api_clients.plans")
			}
			if len(r.Candidates) > 0 {
				v.add(at("candidates"), "candidates cannot be used with limits_from")
			}
		}
		if counts && len(r.Limits) == 0 && !caps && r.LimitsFrom == "" {
			v.add(at("limits"), fmt.Sprintf("a %s rule needs at least one limit, such as limits: [100/5m], or a max_inflight cap", r.Action))
		}
		if !counts {
			for _, field := range []struct {
				name string
				set  bool
			}{
				{"candidates", len(r.Candidates) > 0}, {"ban", r.Ban != ""}, {"count_when", r.CountWhen != ""},
				{"cost", r.Cost != ""}, {"max_inflight", r.MaxInflight != 0}, {"max_inflight_per_key", r.MaxInflightPerKey != 0},
			} {
				if field.set {
					v.add(at(field.name), fmt.Sprintf("has no meaning for action %s: use action block or count", r.Action))
				}
			}
		}
		if v.set(at("failure_policy"), r.FailurePolicy) {
			v.oneOf(at("failure_policy"), "failure policy", r.FailurePolicy, failurePolicies)
		}
		v.intRange(at("max_inflight"), r.MaxInflight, 0, 1000000)
		v.intRange(at("max_inflight_per_key"), r.MaxInflightPerKey, 0, 1000000)
		if r.Ban != "" {
			if d, err := ParseBan(r.Ban); err != nil {
				v.add(at("ban"), err.Error())
			} else if r.Action == ActionCount && d > 0 {
				v.add(at("ban"), "a count rule never refuses, so it never bans: use action block")
			}
		}
		if r.CountWhen != "" && strings.TrimSpace(r.CountWhen) == "" {
			v.add(at("count_when"), "the condition is blank; leave count_when out to count every request")
		}
		if r.Cost != "" {
			if _, _, err := ParseCost(r.Cost); err != nil {
				v.add(at("cost"), err.Error(), CostForms()...)
			}
		}
		if (r.CountWhen != "" || (r.Cost != "" && r.Cost != CostRequests)) && len(r.Limits) == 0 && r.LimitsFrom == "" {
			v.add(at("limits"), "count_when and cost count against limits: add one, such as limits: [600/1h]")
		}

		kinds := map[string]int{}
		for j, k := range r.Key {
			kp, err := ParseKey(k)
			if err != nil {
				var allowed []string
				if kind, _, _ := strings.Cut(k, ":"); !slices.Contains(keyNames[:], kind) || kind == "" {
					allowed = KeyForms()
				}
				v.add(indexPath(at("key"), j), err.Error(), allowed...)
				continue
			}
			if prev, dup := kinds[kp.String()]; dup {
				v.add(indexPath(at("key"), j), fmt.Sprintf("%s is already key[%d]", kp, prev))
				continue
			}
			kinds[kp.String()] = j
		}

		alg, err := ratelimit.ParseAlgorithm(r.Algorithm)
		if err != nil || counts && r.Algorithm == "" { // "" only as written: the default fills a missing one
			v.add(at("algorithm"), fmt.Sprintf("unknown algorithm %q%s", r.Algorithm, algorithmHint(r.Algorithm)), ratelimit.AlgorithmNames()...)
		}
		windows := map[string]int{}
		for j, s := range r.Limits {
			lp := indexPath(at("limits"), j)
			l, err := ParseLimit(s, alg)
			if err != nil {
				v.add(lp, err.Error())
				continue
			}
			w := ratelimit.FormatWindow(l.Window)
			if prev, dup := windows[w]; dup {
				v.add(lp, fmt.Sprintf("limits[%d] already has the window %s: one limit per window", prev, w))
				continue
			}
			windows[w] = j
		}

		candidates := map[ratelimit.Limit]int{}
		for j, s := range r.Candidates {
			cp := indexPath(at("candidates"), j)
			l, err := ParseLimit(s, alg)
			if err != nil {
				v.add(cp, err.Error())
				continue
			}
			if slices.ContainsFunc(r.Limits, func(live string) bool { ll, err := ParseLimit(live, alg); return err == nil && ll == l }) {
				v.add(cp, fmt.Sprintf("%s is already a live limit of the rule", s))
				continue
			}
			// Both would count into one series: each request twice.
			if prev, dup := candidates[l]; dup {
				v.add(cp, fmt.Sprintf("%s is already candidates[%d]", s, prev))
				continue
			}
			candidates[l] = j
		}
		if r.RetryAfter != "" {
			if _, err := ParseRetryAfter(r.RetryAfter); err != nil {
				v.add(at("retry_after"), err.Error())
			}
		}
		for _, lang := range sortedKeys(r.Message) {
			if lang != "" && !languageTag.MatchString(lang) {
				v.add(joinKey(at("message"), lang), fmt.Sprintf("%q is not a language tag such as en, es or pt-BR", lang))
			}
		}
	}
}

func (v *validator) responses() {
	cors := v.c.Responses.CORS
	if o := cors.AllowOrigin; o != "" && o != "*" {
		if msg := checkOrigin(o); msg != "" {
			v.add("responses.cors.allow_origin", msg)
		}
	}
	for i, h := range cors.ExposeHeaders {
		if !isToken(h) {
			v.add(indexPath("responses.cors.expose_headers", i), fmt.Sprintf("%q is not a header name", h))
		}
	}
	v.oneOf("responses.ratelimit_headers", "ratelimit_headers value", v.c.Responses.RateLimitHeaders, rateLimitHeaders)
}

func checkOrigin(s string) string {
	bad := fmt.Sprintf(`%q is not "*" nor an origin such as https://example.org (scheme, host and optional port, no path)`, s)
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" ||
		u.User != nil || u.Path != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return bad
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad
		}
	}
	return ""
}

// algorithmHint names floodgate's algorithm for the one another tool
// calls by a name floodgate does not use, or "".
func algorithmHint(s string) string {
	switch k := strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(s)); k {
	case "tokenbucket", "leakybucket", "bucket":
		return ": gcra is the token bucket (and the leaky bucket of nginx limit_req): write algorithm: gcra"
	case "slidingwindowcounter", "slidingwindowlog", "slidinglog", "sliding", "rolling", "rollingwindow":
		return ": write algorithm: sliding_window"
	case "fixed", "fixedwindowcounter", "window":
		return ": write algorithm: fixed_window"
	}
	return ""
}
