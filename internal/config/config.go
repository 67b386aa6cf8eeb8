package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is floodgate's configuration: a file's settings with its
// environment applied and variables expanded (see Parse). Field comments
// give defaults, which ApplyDefaults sets, and allowed values, which
// File.Validate checks.
type Config struct {
	// Mode is "enforce" (default) or "log-only". In log-only mode every
	// block or deny becomes a would-block: counted and reported, never
	// answered.
	Mode string `yaml:"mode" json:"mode,omitempty"`
	// Listen is the public listener's address, host:port (host empty for
	// every interface). Default "127.0.0.1:8080".
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// TLS, when set, terminates TLS on the public listener (HTTP/1.1 and
	// HTTP/2 by ALPN).
	TLS TLS `yaml:"tls" json:"tls"`
	// Server tunes the public listener's timeouts.
	Server Server `yaml:"server" json:"server"`
	// Admin is the admin listener (metrics, health).
	Admin Admin `yaml:"admin" json:"admin"`
	// Internal is a second listener for trusted callers, such as a web
	// frontend's server-side rendering.
	Internal Internal `yaml:"internal" json:"internal"`
	// Decide is the decision listener, for a proxy that asks floodgate
	// whether a request may pass (nginx auth_request and the like).
	Decide Decide `yaml:"decide" json:"decide"`
	// ClientIP says how the client address is found.
	ClientIP ClientIP `yaml:"client_ip" json:"client_ip"`
	// Store selects where counters live.
	Store Store `yaml:"store" json:"store"`
	// Upstreams are the servers requests are forwarded to, by name
	// (lower-case letters, digits, "_" and "-"). At least one.
	Upstreams map[string]Upstream `yaml:"upstreams" json:"upstreams"`
	// Routes map request paths to upstreams, first match wins. Default,
	// with exactly one upstream: one route named "default" sending every
	// path to it. Required with two or more.
	Routes []Route `yaml:"routes" json:"routes"`
	// RouteGroups fences route groups by path prefix, by group name (a
	// group of routes).
	RouteGroups map[string]RouteGroup `yaml:"route_groups" json:"route_groups,omitempty"`
	// Rules are evaluated in order for every request (docs/rules.md).
	Rules []Rule `yaml:"rules" json:"rules"`
	// Sessions issues and verifies signed visitor sessions.
	Sessions Sessions `yaml:"sessions" json:"sessions"`
	// APIClients names the API clients and their plans.
	APIClients APIClients `yaml:"api_clients" json:"api_clients"`
	// Responses shapes floodgate's own answers.
	Responses Responses `yaml:"responses" json:"responses"`
	// Log configures logging and the decision log.
	Log Log `yaml:"log" json:"log"`
	// Reload tunes how the file watcher reloads the configuration.
	Reload Reload `yaml:"reload" json:"reload"`
}

// TLS is the public listener's certificate. Both files or neither.
type TLS struct {
	// CertFile is a PEM certificate chain, leaf first.
	CertFile string `yaml:"cert_file" json:"cert_file,omitempty"`
	// KeyFile is the PEM private key of the leaf certificate.
	KeyFile string `yaml:"key_file" json:"key_file,omitempty"`
}

// Admin is the admin listener.
type Admin struct {
	// Listen is the admin address, host:port. Default "127.0.0.1:9090";
	// "off" disables it.
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// Token is the bearer token the /admin/ endpoints require (at least 16
	// characters; put it in the environment: ${FLOODGATE_ADMIN_TOKEN}).
	// Default none: those endpoints then answer only to loopback peers.
	Token string `yaml:"token" json:"token,omitempty" secret:"true"`
}

// Internal is the internal listener: the same routes, upstreams and
// credentials as the public one, for callers that are already counted
// (server-side rendering of a page load that was). Whether a request is
// internal depends only on the listener it arrived on, never on anything
// the request says.
type Internal struct {
	// Listen is the internal listener's address: host:port, or
	// "unix:/path/to.sock" for a Unix socket. Default "" (or "off"): no
	// internal listener. Bind it to loopback or a private network only.
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// EvaluateRules, when true, runs the rules for internal requests too
	// (client.internal is then true in conditions). Default false:
	// internal requests are forwarded without being counted or limited.
	EvaluateRules bool `yaml:"evaluate_rules" json:"evaluate_rules,omitempty"`
}

// Decide is the decision listener: a proxy already in front of the API
// (nginx auth_request, Caddy forward_auth, Traefik ForwardAuth, Envoy
// ext_authz) asks it whether each request may pass, and floodgate decides
// with the same routes, rules and store as its own gateway, without
// forwarding anything (docs/decide.md).
type Decide struct {
	// Listen is the decision listener's address, host:port. Default ""
	// (or "off"): none. The proxy that asks must be in
	// client_ip.trusted_proxies.
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// Protocol is how the asking proxy describes the original request:
	// "nginx" (X-Original-Method, X-Original-URI; refusals answered 403
	// with X-Floodgate-Status), "forwarded" (X-Forwarded-Method,
	// X-Forwarded-Uri, X-Forwarded-Host, X-Forwarded-Proto: Caddy,
	// Traefik) or "envoy" (ext_authz HTTP service: the original method,
	// and the original path after /decide). Required with listen: it is
	// never guessed from the request, whose headers the client may have
	// written. Checked with the listener off too.
	Protocol string `yaml:"protocol" json:"protocol,omitempty"`
}

// Decision listener protocols.
const (
	DecideNginx     = "nginx"
	DecideForwarded = "forwarded"
	DecideEnvoy     = "envoy"
)

// DecideEnabled reports whether the decision listener is configured.
func (c *Config) DecideEnabled() bool {
	return c.Decide.Listen != "" && c.Decide.Listen != ListenOff
}

// Sessions configures floodgate's own visitor sessions: a
// signed cookie issued on page loads, so that people sharing one IP
// address are counted apart (rules key by "session").
type Sessions struct {
	// Secret signs the cookie: one or more secrets of at least 32 bytes,
	// comma-separated, newest first; the first signs, all verify (put it
	// in the environment: ${HMAC_SIGNING_SECRET}). Sessions are off while
	// it is empty.
	Secret string `yaml:"secret" json:"secret,omitempty" secret:"true"`
	// Cookie is the cookie name. Default "ovSession".
	Cookie string `yaml:"cookie" json:"cookie,omitempty"`
	// MaxAge is how long a session is valid after it was issued, a
	// duration (see ParseDuration) from 1s to 400d. Default "1h".
	MaxAge string `yaml:"max_age" json:"max_age,omitempty"`
	// IssueWhen is a CEL condition over the request model: a request it
	// holds for that has no valid session gets one (Set-Cookie on the
	// response). Default "request.method == 'GET'".
	IssueWhen string `yaml:"issue_when" json:"issue_when,omitempty"`
	// PerIP counts new sessions per client address.
	PerIP SessionsPerIP `yaml:"per_ip" json:"per_ip"`
}

// SessionsPerIP configures the sessions-per-address distribution and its
// optional cap.
type SessionsPerIP struct {
	// Window is the length of the fixed counting windows, from 1s to
	// 366d. Default "1h".
	Window string `yaml:"window" json:"window,omitempty"`
	// MaxNew caps the sessions issued per address per window; a page load
	// over it is served without a new session. 0 to 2^30; default 0: no
	// cap.
	MaxNew int `yaml:"max_new" json:"max_new,omitempty"`
	// MaxAddresses bounds the addresses tracked per window, 1 to 2^24.
	// Default 65536.
	MaxAddresses int `yaml:"max_addresses" json:"max_addresses,omitempty"`
}

// APIClients identifies API clients and gives each a plan. A
// request names its client either by a bearer token whose SHA-256 is
// listed here, or by matching a route whose upstream has auth.api_client
// set (the gateway's own credentials). Rules count by key "api_client"
// and take their limits from the client's plan with limits_from: plan.
type APIClients struct {
	// Plans map a plan name (lower-case letters, digits, "_" and "-") to
	// its limits, "N/WINDOW" strings; an empty list is a plan without
	// limits (exempt).
	Plans map[string][]string `yaml:"plans" json:"plans,omitempty"`
	// Clients are the known API clients.
	Clients []APIClient `yaml:"clients" json:"clients,omitempty"`
}

// APIClient is one known API client.
type APIClient struct {
	// ID names the client in rules (api_client.id), keys and metrics:
	// letters, digits, ".", "_" and "-", at most 64.
	ID string `yaml:"id" json:"id"`
	// Plan is the name of an entry in api_clients.plans.
	Plan string `yaml:"plan" json:"plan"`
	// TokenSHA256 is the hex SHA-256 of the bearer token the client sends
	// in "Authorization: Bearer TOKEN" (sha256sum of the token, no
	// newline). Optional: a client without one is named only by an
	// upstream's auth.api_client.
	TokenSHA256 string `yaml:"token_sha256" json:"token_sha256,omitempty"`
}

// Server tunes the public listener's HTTP server. Durations are read by
// ParseDuration ("10s", "2m"), each from 1ms to 1h.
type Server struct {
	// ReadHeaderTimeout bounds how long a client may take to send its
	// request headers (slowloris protection). Default "10s".
	ReadHeaderTimeout string `yaml:"read_header_timeout" json:"read_header_timeout,omitempty"`
	// IdleTimeout closes keep-alive connections idle that long. Default "120s".
	IdleTimeout string `yaml:"idle_timeout" json:"idle_timeout,omitempty"`
	// ShutdownGrace is how long in-flight requests may run after SIGTERM
	// before floodgate exits anyway. Default "30s".
	ShutdownGrace string `yaml:"shutdown_grace" json:"shutdown_grace,omitempty"`
	// Engine serves the public, internal and decision listeners' plain-text
	// HTTP/1.x: floodgate (default: package h1server, less work per
	// request) or net/http (Go's own server). With tls, net/http serves
	// (HTTP/2 by ALPN) whatever this says.
	Engine string `yaml:"engine" json:"engine,omitempty"`
	// MaxHeaderBytes bounds a request's head (request line, fields and
	// the line ends), exactly, with either engine: a larger one gets 431.
	// 1024 to 1048576; default 65536.
	MaxHeaderBytes int `yaml:"max_header_bytes" json:"max_header_bytes,omitempty"`
	// MaxBodyBytes bounds a request body (routes may override): a
	// declared Content-Length over it is answered 413 before anything is
	// forwarded, and a chunked body as soon as it passes it, like
	// nginx's client_max_body_size. Default 10485760 (10 MiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes,omitempty"`
	// MaxURIBytes bounds the request target; a longer one is answered
	// 414. Default 8192.
	MaxURIBytes int `yaml:"max_uri_bytes" json:"max_uri_bytes,omitempty"`
	// BodyReadTimeout bounds the wait between two reads of a request
	// body (not the whole body), like nginx's client_body_timeout: a
	// client silent that long is answered 408. Default "60s".
	BodyReadTimeout string `yaml:"body_read_timeout" json:"body_read_timeout,omitempty"`
	// WriteIdleTimeout bounds each write of an answer to a client that
	// does not read it (not the whole answer), like nginx's send_timeout:
	// the connection is then closed. Default "60s".
	WriteIdleTimeout string `yaml:"write_idle_timeout" json:"write_idle_timeout,omitempty"`
	// RequestBufferBytes is how much of a body a route with
	// request_buffering on holds in memory; the rest goes to a temporary
	// file, like nginx's client_body_buffer_size. Default 65536.
	RequestBufferBytes int64 `yaml:"request_buffer_bytes" json:"request_buffer_bytes,omitempty"`
	// MaxConnections caps the client connections open at once on the
	// public and internal listeners together; one more is closed at once
	// and counted (floodgate_connections_rejected_total), like nginx's
	// worker_connections. Default 0: what the open files limit allows,
	// two descriptors a request, less 256.
	MaxConnections int `yaml:"max_connections" json:"max_connections,omitempty"`
}

// ClientIP configures client address resolution.
type ClientIP struct {
	// TrustedProxies are CIDRs or addresses of proxies whose forwarding
	// header is believed. A YAML list, or one comma-separated string (so a
	// single ${VAR} can carry it). Default none: the peer address is the
	// client.
	TrustedProxies StringList `yaml:"trusted_proxies" json:"trusted_proxies,omitempty"`
	// TrustedHops, when positive, trusts that many proxies in front of
	// floodgate regardless of their address: the client is the entry that
	// many places from the right of the forwarding header. 0 (default) to
	// 32; exclusive with TrustedProxies.
	TrustedHops int `yaml:"trusted_hops" json:"trusted_hops,omitempty"`
	// Header is "X-Forwarded-For" (default) or "Forwarded", in any case;
	// ApplyDefaults canonicalises it.
	Header string `yaml:"header" json:"header,omitempty"`
	// IPv6Prefix is the prefix length that groups IPv6 clients when the
	// address is used as a key, 16 to 128. Default 64.
	IPv6Prefix int `yaml:"ipv6_prefix" json:"ipv6_prefix,omitempty"`
	// IPv4Prefix groups IPv4 clients likewise, 8 to 32. Default 32.
	IPv4Prefix int `yaml:"ipv4_prefix" json:"ipv4_prefix,omitempty"`
}

// Store selects the counter store.
type Store struct {
	// URL is "memory" (default), the embedded in-memory store; or a Redis
	// (or Valkey) server shared by gateway replicas:
	// redis://[user:pass@]host:port[/db], rediss://… for TLS, and
	// redis://host1:port1,host2:port2,… for a Redis Cluster; valkey:// and
	// valkeys:// are the same as redis:// and rediss://.
	URL string `yaml:"url" json:"url,omitempty"`
	// MaxKeys caps the keys the memory store tracks, 1024 to 268435456.
	// Default 1048576.
	MaxKeys int `yaml:"max_keys" json:"max_keys,omitempty"`
	// Timeout bounds each decision by the Redis store, round trip
	// included: a dead or slow store costs at most this. Default "100ms".
	Timeout string `yaml:"timeout" json:"timeout,omitempty"`
	// FailurePolicy is what rules do when the store fails, unless a rule
	// says otherwise: fail_open (default: the request is admitted, the
	// failure counted) or fail_closed (503 with Retry-After).
	FailurePolicy string `yaml:"failure_policy" json:"failure_policy,omitempty"`
}

// Upstream is one server floodgate forwards to.
type Upstream struct {
	// URL is the upstream's base URL, e.g. "http://127.0.0.1:8081": http
	// or https, with a host, and no credentials, query or fragment. Its
	// path, if any, prefixes every forwarded path.
	URL string `yaml:"url" json:"url"`
	// Timeouts bound every request to this upstream (routes may override).
	Timeouts Timeouts `yaml:"timeouts" json:"timeouts"`
	// Auth gives floodgate its own credentials to this upstream.
	// When set, the browser's Cookie and Authorization never reach
	// the upstream, and its Set-Cookie never reaches the browser.
	Auth UpstreamAuth `yaml:"auth" json:"auth"`
	// ConnectionReuse says which requests a pooled connection to this
	// upstream may carry: shared (any; the default), per_client (only
	// those of the client connection it last served) or none (closed
	// after each response). Against an upstream that answers more than
	// it is asked.
	ConnectionReuse string `yaml:"connection_reuse" json:"connection_reuse,omitempty"`
}

// UpstreamAuth is floodgate's credentials to an upstream.
type UpstreamAuth struct {
	// Type is "" (none), client_credentials (an OAuth2 token fetched from
	// token_url, cached and refreshed before it expires) or header (a
	// fixed header_value in header_name).
	Type string `yaml:"type" json:"type,omitempty"`
	// TokenURL is the token endpoint: an http(s) URL, or a path on the
	// upstream. Default "/v1/auth_tokens/token/" (the Openverse API's).
	TokenURL string `yaml:"token_url" json:"token_url,omitempty"`
	// ClientID and ClientSecret are the client credentials (put them in
	// the environment: ${API_CLIENT_ID}, ${API_CLIENT_SECRET}).
	ClientID     string `yaml:"client_id" json:"client_id,omitempty"`
	ClientSecret string `yaml:"client_secret" json:"client_secret,omitempty" secret:"true"`
	// HeaderName and HeaderValue are the fixed header of type header.
	// Default name "Authorization".
	HeaderName  string `yaml:"header_name" json:"header_name,omitempty"`
	HeaderValue string `yaml:"header_value" json:"header_value,omitempty" secret:"true"`
	// Optional, when true, forwards without credentials while they are
	// empty, instead of refusing to start. Meant for a development
	// environment only.
	Optional bool `yaml:"optional" json:"optional,omitempty"`
	// APIClient is the api_clients.clients id that requests forwarded
	// with these credentials count as (the frontend's own plan).
	APIClient string `yaml:"api_client" json:"api_client,omitempty"`
}

// Timeouts bound a request to an upstream. Durations are read by
// ParseDuration, each from 1ms to 1h; empty means the default (or, on a
// route, the upstream's).
type Timeouts struct {
	// Connect bounds dialing the upstream. Default "5s".
	Connect string `yaml:"connect" json:"connect,omitempty"`
	// ResponseHeader bounds the wait for the response's header after the
	// request is sent. Default "30s".
	ResponseHeader string `yaml:"response_header" json:"response_header,omitempty"`
	// Total bounds the whole exchange, body included. Default none.
	Total string `yaml:"total" json:"total,omitempty"`
}

// Route sends requests whose path matches Path to Upstream.
type Route struct {
	// Name identifies the route in metrics, logs and rule conditions:
	// lower-case letters, digits, "_" and "-", unique among routes.
	Name string `yaml:"name" json:"name"`
	// Group is an optional label shared by several routes, visible to
	// rule conditions as route_group; written like Name.
	Group string `yaml:"group" json:"group,omitempty"`
	// Path is a pattern: literal segments, "{name}" for one segment and a
	// trailing "{name...}" for the rest; "/" alone matches everything
	// (see ParseRoutePattern).
	Path string `yaml:"path" json:"path"`
	// Methods restricts the route to these methods, in any case;
	// ApplyDefaults upper-cases them. Default all.
	Methods []string `yaml:"methods" json:"methods,omitempty"`
	// Upstream is the name of an entry in upstreams.
	Upstream string `yaml:"upstream" json:"upstream"`
	// Rewrite, if set, is the upstream path, with "{name}" replaced by the
	// matched segment (see ParseRewrite). Default: the request path
	// unchanged.
	Rewrite string `yaml:"rewrite" json:"rewrite,omitempty"`
	// Params constrain the path's named segments: "uuid", "int", a
	// regular expression the whole segment must match, or a mapping from
	// each allowed value to what a rewrite puts in its place
	// ({image: images, audio: audio}). A request whose segment does not
	// match is not this route's (the next route may take it); with a
	// rewrite, nothing else can reach the upstream path.
	Params map[string]ParamSpec `yaml:"params" json:"params,omitempty"`
	// TrailingSlash is "exact" (default: a path ends in "/" exactly when
	// Path does) or "optional": the path matches with or without one after
	// its last segment, as Nuxt's and vue-router's non-strict routes do;
	// a rewrite gives both the same upstream path.
	TrailingSlash string `yaml:"trailing_slash" json:"trailing_slash,omitempty"`
	// Query filters the query string forwarded to the upstream.
	Query RouteQuery `yaml:"query" json:"query"`
	// MaxInflight caps the route's requests in flight in this gateway
	// process; over it, 503 at once. 0 to 1000000; default 0: no cap.
	MaxInflight int `yaml:"max_inflight" json:"max_inflight,omitempty"`
	// Timeouts override the upstream's for this route.
	Timeouts Timeouts `yaml:"timeouts" json:"timeouts"`
	// TimeoutStatus is the status of the answer when the upstream times
	// out: 504 (default) or 503.
	TimeoutStatus int `yaml:"timeout_status" json:"timeout_status,omitempty"`
	// RetryAfter is the Retry-After of the route's 503/504 answers
	// (capacity, timeouts). Default "10s".
	RetryAfter string `yaml:"retry_after" json:"retry_after,omitempty"`
	// MaxBodyBytes overrides server.max_body_bytes for this route.
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes,omitempty"`
	// RequestBuffering "on" reads a request body whole (in memory up to
	// server.request_buffer_bytes, the rest in a temporary file) before
	// the request is forwarded, so a slow upload never holds the
	// upstream, like nginx's proxy_request_buffering; "off" (default)
	// streams it, for streaming routes.
	RequestBuffering string `yaml:"request_buffering" json:"request_buffering,omitempty"`
}

// MatchMethods returns the methods r takes, in upper case: its Methods,
// and HEAD where they hold GET and not HEAD, as Go's ServeMux and nginx's
// limit_except take it (a HEAD is a GET without the body, RFC 9110
// section 9.3.2); nil when r takes every method.
func (r *Route) MatchMethods() []string {
	if len(r.Methods) == 0 {
		return nil
	}
	ms := make([]string, 0, len(r.Methods)+1)
	for _, m := range r.Methods {
		ms = append(ms, strings.ToUpper(m))
	}
	if slices.Contains(ms, "GET") && !slices.Contains(ms, "HEAD") {
		ms = append(ms, "HEAD")
	}
	return ms
}

// RouteGroup fences the paths under Prefix: only the routes of the group
// may take them, and one that none of them matches is answered 404 by
// floodgate instead of falling through to a later route (an API's paths
// never reach a catch-all frontend).
type RouteGroup struct {
	// Prefix is a path of literal segments, such as "/api/" ("/api" is
	// the same); a path is under it when its first segments are those,
	// compared without regard to ASCII case, after decoding and cleaning.
	Prefix string `yaml:"prefix" json:"prefix"`
}

// RouteQuery filters a route's query parameters.
type RouteQuery struct {
	// Allow lists the parameters forwarded; others are dropped. Empty:
	// every parameter is forwarded.
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	// Max caps numeric parameters: a value above the cap (or not a
	// number) is answered 400, or dropped with over_max: drop.
	Max map[string]int64 `yaml:"max" json:"max,omitempty"`
	// OverMax is reject (default: 400) or drop.
	OverMax string `yaml:"over_max" json:"over_max,omitempty"`
}

// Rule is one rate rule.
type Rule struct {
	// Name identifies the rule in metrics, logs and RateLimit-Policy:
	// lower-case letters, digits, ".", "_" and "-", at most 64, unique
	// among rules. Required.
	Name string `yaml:"name" json:"name"`
	// When is a CEL condition over the request model (docs/rules.md).
	// Default "true".
	When string `yaml:"when" json:"when,omitempty"`
	// Action is block (default: 429 when over a limit), deny (403, no
	// counting), count (shadow: counted and reported, never blocks) or
	// allow (stop evaluating rules).
	Action string `yaml:"action" json:"action,omitempty"`
	// Key lists the characteristics the rule counts by, combined: ip
	// (default), path, route, method, host, session, api_client,
	// header:NAME, query:NAME, expr:CEL (see ParseKey). Only for block and
	// count rules.
	Key []string `yaml:"key" json:"key,omitempty"`
	// Limits are "N/WINDOW" strings (ratelimit.ParseLimit), all enforced
	// together, at most one per window. Required for block and count
	// rules (unless limits_from is set), not allowed for deny and allow.
	Limits []string `yaml:"limits" json:"limits,omitempty"`
	// LimitsFrom "plan" takes the limits from the API client's plan
	// (api_clients.plans): the rule applies only to requests with a
	// known API client, one counter set per plan, reported as the rules
	// NAME.PLAN. Exclusive with limits.
	LimitsFrom string `yaml:"limits_from" json:"limits_from,omitempty"`
	// Algorithm is sliding_window (default), gcra or fixed_window. Only
	// for block and count rules.
	Algorithm string `yaml:"algorithm" json:"algorithm,omitempty"`
	// RetryAfter, if set, is the fixed Retry-After of this rule's answers:
	// whole seconds from 1s to 24h, as "300s", "5m" or "300" (see
	// ParseRetryAfter); otherwise it is computed from the limiter. Only
	// for block and count rules.
	RetryAfter string `yaml:"retry_after" json:"retry_after,omitempty"`
	// Message is the body text of this rule's answers: one string, or a
	// map from language tag (en, es, pt-BR) to string.
	Message Message `yaml:"message" json:"message,omitempty"`
	// Candidates are shadow limits evaluated on the same key next to the
	// live ones, each reported as its own series, so a threshold can be
	// tuned on live traffic without a second rule.
	Candidates []string `yaml:"candidates" json:"candidates,omitempty"`
	// Ban, once the rule refuses a key, keeps refusing it for this long
	// ("10m", "1d"; 1s to 366d), whatever its counters say.
	Ban string `yaml:"ban" json:"ban,omitempty"`
	// CountWhen, a CEL condition over the response (response.status,
	// response.headers), counts a request only when it holds, after the
	// response: "response.status == 401" counts failed logins only. The
	// limit is checked before forwarding.
	CountWhen string `yaml:"count_when" json:"count_when,omitempty"`
	// Cost is what a request costs against the limits: requests (default,
	// 1 each), upstream_seconds (measured upstream time), response_bytes,
	// or header:NAME (a number the upstream sends in that response
	// header). Costs other than requests are charged after the response.
	Cost string `yaml:"cost" json:"cost,omitempty"`
	// MaxInflight caps the rule's requests in flight in this gateway
	// process, all keys together; over it, 503 at once. 0 to 1000000;
	// default 0: no cap.
	MaxInflight int `yaml:"max_inflight" json:"max_inflight,omitempty"`
	// MaxInflightPerKey caps the rule's requests in flight per key, in
	// this gateway process. 0 to 1000000; default 0: no cap.
	MaxInflightPerKey int `yaml:"max_inflight_per_key" json:"max_inflight_per_key,omitempty"`
	// FailurePolicy overrides store.failure_policy for this rule:
	// fail_open or fail_closed.
	FailurePolicy string `yaml:"failure_policy" json:"failure_policy,omitempty"`
}

// Responses shapes every answer floodgate gives itself.
type Responses struct {
	// CORS adds headers to 429/403/503 answers so browsers can read them.
	CORS CORS `yaml:"cors" json:"cors"`
	// RateLimitHeaders is "always" (default: on forwarded responses too),
	// "limited" (only on floodgate's own 429s) or "never".
	RateLimitHeaders string `yaml:"ratelimit_headers" json:"ratelimit_headers,omitempty"`
}

// CORS headers for floodgate's answers.
type CORS struct {
	// AllowOrigin is sent as Access-Control-Allow-Origin: "*", or one
	// origin such as "https://example.org". Default "": no CORS headers.
	AllowOrigin string `yaml:"allow_origin" json:"allow_origin,omitempty"`
	// ExposeHeaders are sent as Access-Control-Expose-Headers, so that a
	// browser script may read them, e.g. [Retry-After].
	ExposeHeaders []string `yaml:"expose_headers" json:"expose_headers,omitempty"`
}

// Reload tunes the configuration file's watcher.
type Reload struct {
	// Settle is how long a file written in place must stay unchanged
	// before the watcher reloads it, so that a file still being written
	// is never applied; an atomic replacement (rename, a ConfigMap's
	// symlink swap) is reloaded at once. Default "2s".
	Settle string `yaml:"settle" json:"settle,omitempty"`
}

// Log configures the decision log.
type Log struct {
	// Level is debug, info (default), warn or error.
	Level string `yaml:"level" json:"level,omitempty"`
	// Decisions is "limited" (default: blocks, would-blocks and denials),
	// "all" or "none".
	Decisions string `yaml:"decisions" json:"decisions,omitempty"`
	// Access writes one JSON line per request (docs/tuning.md): "none"
	// (default), "stdout" or "stderr". floodgate replay and baseline read it.
	Access string `yaml:"access" json:"access,omitempty"`
}

// StringList is a list of strings that YAML may also give as one
// comma-separated string, so that one ${VAR} can carry a list. Items of
// the string form are trimmed and empty ones dropped: "a, b," is [a b] and
// "" is empty.
type StringList []string

// UnmarshalYAML reads a sequence of scalars or one comma-separated scalar.
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		*l = nil
	case n.Kind == yaml.ScalarNode:
		var items StringList
		for item := range strings.SplitSeq(n.Value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		*l = items
	case n.Kind == yaml.SequenceNode:
		items := make(StringList, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("expected a list of strings, found %s in it", describeNode(c))
			}
			items = append(items, c.Value)
		}
		*l = items
	default:
		return fmt.Errorf("expected a list or a comma-separated string, found %s", describeNode(n))
	}
	return nil
}

// ParamSpec constrains one route parameter: a constraint ("uuid", "int"
// or a regular expression), stored under the key "", or a mapping from
// each allowed value to its rewrite value.
type ParamSpec map[string]string

// UnmarshalYAML reads a scalar constraint or a mapping of values.
func (p *ParamSpec) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*p = ParamSpec{"": n.Value}
	case yaml.MappingNode:
		m := make(ParamSpec, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode || k.Value == "" {
				return fmt.Errorf("expected value: rewrite-value pairs, found %s: %s", describeNode(k), describeNode(v))
			}
			m[k.Value] = v.Value
		}
		*p = m
	default:
		return fmt.Errorf("expected a constraint (uuid, int, a regular expression) or a mapping from value to rewrite value, found %s", describeNode(n))
	}
	return nil
}

// Constraint returns the scalar form's constraint, or "" for a mapping.
func (p ParamSpec) Constraint() string { return p[""] }

// Values returns the mapping form, or nil for a constraint.
func (p ParamSpec) Values() map[string]string {
	if _, ok := p[""]; ok {
		return nil
	}
	return p
}

// Message is a body text, either one string for every language, stored
// under the key "", or one per language tag (en, es, pt-BR).
type Message map[string]string

// UnmarshalYAML reads a scalar, or a mapping from language tag to scalar.
func (m *Message) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		*m = nil
	case n.Kind == yaml.ScalarNode:
		*m = Message{"": n.Value}
	case n.Kind == yaml.MappingNode:
		msg := make(Message, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
				return fmt.Errorf("expected language: text pairs, found %s: %s", describeNode(k), describeNode(v))
			}
			msg[k.Value] = v.Value
		}
		*m = msg
	default:
		return fmt.Errorf("expected a string or a mapping from language to string, found %s", describeNode(n))
	}
	return nil
}

// Names of the closed sets of values, for other packages to switch on.
const (
	ModeEnforce = "enforce"
	ModeLogOnly = "log-only"

	ActionBlock = "block"
	ActionDeny  = "deny"
	ActionCount = "count"
	ActionAllow = "allow"

	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded"

	StoreMemory = "memory"

	RateLimitHeadersAlways  = "always"
	RateLimitHeadersLimited = "limited"
	RateLimitHeadersNever   = "never"

	LogDecisionsLimited = "limited"
	LogDecisionsAll     = "all"
	LogDecisionsNone    = "none"

	// ListenOff as admin.listen disables the admin listener.
	ListenOff = "off"

	AuthClientCredentials = "client_credentials"
	AuthHeader            = "header"

	LimitsFromPlan = "plan"
)
