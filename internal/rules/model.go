package rules

import (
	"net/http"
	"net/netip"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"

	"github.com/floodgate/floodgate/internal/config"
)

// Request is what rules see of one HTTP request: the request model of
// docs/rules.md. The gateway fills one per request (from a pool) and
// Reset clears it. The CEL variables resolve lazily from it, so a
// condition that reads only request.path costs no header or query parsing.
type Request struct {
	HTTP *http.Request
	// Path is the cleaned, decoded request path rules match against.
	Path string
	// Route and RouteGroup name the route the request matched.
	Route, RouteGroup string
	// ClientIP is the resolved client address (internal/clientip).
	ClientIP netip.Addr
	// ClientPrefix is ClientIP grouped by the configured prefix length
	// (/64 for IPv6 by default): what an "ip" key counts by.
	ClientPrefix netip.Prefix
	// Internal reports a request from the internal listener.
	Internal bool
	// Scheme, when set, is request.scheme: the scheme of the request a
	// proxy asks the decision listener about. Empty: that of the
	// connection to floodgate.
	Scheme string
	// NoResponse marks a request decided for a proxy that forwards it
	// itself (the decision listener): floodgate sees neither its end nor
	// its response, so the rules that need them (NeedsResponse) are
	// skipped rather than half applied.
	NoResponse bool
	// SessionPresent and SessionValid describe the session cookie.
	SessionPresent, SessionValid bool
	// Session is the verified session identifier, or "".
	Session string
	// APIClient is the authenticated API client id, or "".
	APIClient string
	// APIClientPlan is that client's plan, or "".
	APIClientPlan string

	headers map[string]string
	query   map[string]string
	pathVal ref.Val // Path as a CEL value (pathValue)
	pathFor string  // the Path pathVal was made of
	// matchKnown and matchHolds: the results of the shared matches() of
	// the slots matchTab numbers (matchSlots), bit i for slot i.
	matchTab               *matchSlots
	matchKnown, matchHolds uint64
	keyBuf                 []byte
	banBuf                 []byte
	held                   []heldSlot
	deferred               []deferredCharge
	// WouldBlock lists the rules that would have refused the request
	// without answering it (count rules over their limit, block and deny
	// rules in log-only mode), for the access log.
	WouldBlock []string
}

// Pending reports whether Finish has work for r: concurrency slots to
// release or counts that depend on the response.
func (r *Request) Pending() bool { return len(r.held) > 0 || len(r.deferred) > 0 }

// ReadsResponseHeader reports whether Finish reads the response's header
// fields: a rule counts r by a count_when condition or by a header's
// value.
func (r *Request) ReadsResponseHeader() bool {
	for _, c := range r.deferred {
		if c.rule.countWhen != nil || c.rule.Cost == config.CostHeader {
			return true
		}
	}
	return false
}

// Reset clears r for reuse.
func (r *Request) Reset() {
	*r = Request{keyBuf: r.keyBuf[:0], banBuf: r.banBuf[:0], held: r.held[:0], deferred: r.deferred[:0], WouldBlock: r.WouldBlock[:0]}
}

// variables is the request model: every CEL variable a condition or key
// expression may use, with its type. docs/rules.md lists the same.
var variables = []struct {
	name string
	typ  *cel.Type
	doc  string
}{
	{"request.method", cel.StringType, `HTTP method, upper case: "GET"`},
	{"request.path", cel.StringType, `decoded, cleaned path: "/api/v1/score-sets/urn:mavedb:1/scores"`},
	{"request.host", cel.StringType, `Host header without port, lower case`},
	{"request.scheme", cel.StringType, `"http" or "https" (of the connection to floodgate; on the decision listener, the proxy's X-Forwarded-Proto)`},
	{"request.headers", cel.MapType(cel.StringType, cel.StringType), `header fields by lower-case name; repeated fields joined with ", "`},
	{"request.query", cel.MapType(cel.StringType, cel.StringType), `query parameters by name; the first value of each`},
	{"request.user_agent", cel.StringType, `User-Agent header, "" when absent`},
	{"route.name", cel.StringType, `name of the matched route`},
	{"route.group", cel.StringType, `group of the matched route, "" when none`},
	{"client.ip", cel.StringType, `client address (see client_ip), not grouped by prefix`},
	{"client.internal", cel.BoolType, `true for requests from the internal listener`},
	{"session.present", cel.BoolType, `a session cookie was sent`},
	{"session.valid", cel.BoolType, `the session cookie verified`},
	{"api_client.id", cel.StringType, `authenticated API client id, "" when none`},
	{"api_client.plan", cel.StringType, `that client's plan (api_clients.plans), "" when none`},
}

// Variables returns the request model's variable names, types and
// descriptions, for documentation and `floodgate validate`.
func Variables() [][3]string {
	out := make([][3]string, len(variables))
	for i, v := range variables {
		out[i] = [3]string{v.name, v.typ.String(), v.doc}
	}
	return out
}

// activation resolves CEL variables from a Request without building a map.
type activation struct{ r *Request }

var _ interpreter.Activation = activation{}

func (a activation) Parent() interpreter.Activation { return nil }

func (a activation) ResolveName(name string) (any, bool) {
	r := a.r
	switch name {
	case "request.method":
		m := r.method()
		if v, ok := methodValues[m]; ok {
			return v, true
		}
		return types.String(m), true
	case "request.path":
		return r.pathValue(), true
	case "request.headers":
		return types.DefaultTypeAdapter.NativeToValue(r.Headers()), true
	case "request.query":
		return types.DefaultTypeAdapter.NativeToValue(r.Query()), true
	}
	if f := stringVars[name]; f != nil {
		return types.String(f(r)), true
	}
	if f := boolVars[name]; f != nil {
		return types.Bool(f(r)), true
	}
	return nil, false
}

// method is the request's method as rules see it, upper case: methods are
// case-sensitive (RFC 9110 §9.1), but upstreams commonly fold them (a
// Django view dispatches "post" as POST), so a rule on POST must see a
// "post" request too, which is forwarded as sent. No allocation for a
// method already in upper case.
func (r *Request) method() string {
	m := r.HTTP.Method
	for i := 0; i < len(m); i++ {
		if 'a' <= m[i] && m[i] <= 'z' {
			return strings.ToUpper(m)
		}
	}
	return m
}

// methodValues are the common methods as CEL values, made once: a
// condition on the method costs no allocation.
var methodValues = func() map[string]ref.Val {
	m := map[string]ref.Val{}
	for _, name := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"} {
		m[name] = types.String(name)
	}
	return m
}()

// pathValue returns Path as a CEL value, made once a request however
// many conditions read it (a string made into a value allocates).
func (r *Request) pathValue() ref.Val {
	if r.pathVal == nil || r.pathFor != r.Path {
		r.pathVal, r.pathFor = types.String(r.Path), r.Path
	}
	return r.pathVal
}

// Headers returns the request's header fields keyed by lower-case name,
// built once per request on first use.
func (r *Request) Headers() map[string]string {
	if r.headers == nil {
		h := make(map[string]string, len(r.HTTP.Header))
		for k, vs := range r.HTTP.Header {
			h[strings.ToLower(k)] = strings.Join(vs, ", ")
		}
		r.headers = h
	}
	return r.headers
}

// Query returns the first value of each query parameter, parsed once per
// request on first use. Malformed pairs are skipped.
func (r *Request) Query() map[string]string {
	if r.query == nil {
		q := make(map[string]string)
		for k, vs := range r.HTTP.URL.Query() {
			if len(vs) > 0 {
				q[k] = vs[0]
			}
		}
		r.query = q
	}
	return r.query
}

func hostOnly(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(h)
}

// responseActivation adds the response to the request model, for
// count_when conditions.
type responseActivation struct {
	activation
	resp *Response
}

func (a responseActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "response.status":
		return types.Int(a.resp.Status), true
	case "response.headers":
		h := make(map[string]string, len(a.resp.Header))
		for k, vs := range a.resp.Header {
			h[strings.ToLower(k)] = strings.Join(vs, ", ")
		}
		return types.DefaultTypeAdapter.NativeToValue(h), true
	}
	return a.activation.ResolveName(name)
}
