package config

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
)

// Defaults of the session, credential and API-client settings.
const (
	DefaultSessionCookie       = "ovSession"
	DefaultSessionMaxAge       = "1h"
	DefaultSessionIssueWhen    = "request.method == 'GET'"
	DefaultSessionWindow       = "1h"
	DefaultSessionMaxAddresses = 1 << 16
	DefaultTokenURL            = "/v1/auth_tokens/token/"
	DefaultAuthHeader          = "Authorization"

	// MinSessionSecretLen is the shortest signing secret accepted.
	MinSessionSecretLen = 32
	// MaxSessionAddresses bounds sessions.per_ip.max_addresses.
	MaxSessionAddresses = 1 << 24
)

var (
	planName     = upstreamName
	apiClientID  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	authTypes    = []string{AuthClientCredentials, AuthHeader}
	limitsFroms  = []string{LimitsFromPlan}
	unixListenRe = regexp.MustCompile(`^unix:/.+`)
)

// SessionsEnabled reports whether sessions are configured (a secret is set).
func (c *Config) SessionsEnabled() bool { return strings.TrimSpace(c.Sessions.Secret) != "" }

// InternalEnabled reports whether the internal listener is configured.
func (c *Config) InternalEnabled() bool {
	return c.Internal.Listen != "" && c.Internal.Listen != ListenOff
}

// SplitSecrets splits a comma-separated list of secrets, newest first,
// trimming spaces and skipping empty items.
func SplitSecrets(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// applyOpenverseDefaults sets the defaults of the sections added for the
// Openverse deployment; called by ApplyDefaults.
func (c *Config) applyOpenverseDefaults() {
	if c.SessionsEnabled() {
		c.Sessions.applyDefaults()
	}
	for name, u := range c.Upstreams {
		switch u.Auth.Type {
		case AuthClientCredentials:
			setDefault(&u.Auth.TokenURL, DefaultTokenURL)
		case AuthHeader:
			setDefault(&u.Auth.HeaderName, DefaultAuthHeader)
		}
		c.Upstreams[name] = u
	}
}

func (s *Sessions) applyDefaults() {
	setDefault(&s.Cookie, DefaultSessionCookie)
	setDefault(&s.MaxAge, DefaultSessionMaxAge)
	setDefault(&s.IssueWhen, DefaultSessionIssueWhen)
	setDefault(&s.PerIP.Window, DefaultSessionWindow)
	setDefault(&s.PerIP.MaxAddresses, DefaultSessionMaxAddresses)
}

// ResolveTokenURL returns the absolute token endpoint of auth on the
// upstream at base: token_url itself when absolute, else joined to base's
// scheme and host.
func ResolveTokenURL(base, tokenURL string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	t, err := url.Parse(tokenURL)
	if err != nil {
		return "", err
	}
	if t.IsAbs() {
		return t.String(), nil
	}
	return url.JoinPath(b.Scheme+"://"+b.Host, t.Path)
}

func (v *validator) internal() {
	l := v.c.Internal.Listen
	if !v.c.InternalEnabled() {
		// A listener switched off (listen: off, typically from the
		// environment) keeps its evaluate_rules for when it is on;
		// evaluate_rules without any listen written is a mistake.
		if v.c.Internal.EvaluateRules && !v.f.Has("internal.listen") {
			v.add("internal.evaluate_rules", "has no meaning without internal.listen")
		}
		return
	}
	if problem := ListenProblem("internal.listen", l); problem != "" {
		v.add("internal.listen", problem)
		return
	}
	if _, problem := SharedListen(v.c, "internal.listen"); problem != "" {
		v.add("internal.listen", problem)
	}
}

func (v *validator) decide() {
	d := v.c.Decide
	// The protocol is checked with the listener off too: the examples
	// turn the listener on from the environment, off by default, so a
	// misspelt protocol would pass every check run without it and stop
	// the start that turns it on.
	switch d.Protocol {
	case DecideNginx, DecideForwarded, DecideEnvoy:
	case "":
		if v.c.DecideEnabled() {
			v.add("decide.protocol", "required with decide.listen: nginx, forwarded (Caddy, Traefik) or envoy; it is never guessed from a request's headers, which the client may have written")
		}
	default:
		v.add("decide.protocol", fmt.Sprintf("%q is not nginx, forwarded or envoy", d.Protocol))
	}
	if !v.c.DecideEnabled() {
		return
	}
	if err := checkListen(d.Listen); err != nil {
		v.add("decide.listen", fmt.Sprintf("%q is not host:port (%v), such as 127.0.0.1:8083, nor \"off\"", d.Listen, err))
	} else if _, problem := SharedListen(v.c, "decide.listen"); problem != "" {
		v.add("decide.listen", problem)
	}
	if len(v.c.ClientIP.TrustedProxies) == 0 {
		v.add("decide.listen", "the decision listener answers only the proxies in client_ip.trusted_proxies, and there are none: list the address of the proxy that asks (trusted_hops trusts any peer, so it cannot stand in)")
	}
}

func (v *validator) sessions() {
	s := v.c.Sessions
	if !v.c.SessionsEnabled() {
		if s == (Sessions{}) && !v.f.Has("sessions.secret") {
			return
		}
		v.add("sessions.secret", "sessions need a signing secret of at least 32 bytes, such as secret: ${HMAC_SIGNING_SECRET} (make one with `openssl rand -base64 48`)")
		// The settings written are checked all the same, so that one run
		// reports every problem: the defaults stand in for the others.
		s.applyDefaults()
	}
	for i, sec := range SplitSecrets(s.Secret) {
		if len(sec) < MinSessionSecretLen {
			v.add("sessions.secret", fmt.Sprintf("secret %d (of the comma-separated list) is %d bytes long; each must be at least %d (make one with `openssl rand -base64 48`)", i+1, len(sec), MinSessionSecretLen))
		}
	}
	if !isToken(s.Cookie) {
		v.add("sessions.cookie", fmt.Sprintf("%q is not a cookie name (letters, digits and !#$%%&'*+-.^_`|~)", s.Cookie))
	}
	if _, err := ParseDuration(s.MaxAge, time.Second, MaxSessionMaxAge); err != nil {
		v.add("sessions.max_age", err.Error())
	}
	if strings.TrimSpace(s.IssueWhen) == "" {
		v.add("sessions.issue_when", "the condition is blank; leave issue_when out to issue on every GET")
	}
	if _, err := ParseDuration(s.PerIP.Window, time.Second, ratelimit.MaxWindow); err != nil {
		v.add("sessions.per_ip.window", err.Error())
	}
	v.intRange("sessions.per_ip.max_new", s.PerIP.MaxNew, 0, 1<<30)
	v.intRange("sessions.per_ip.max_addresses", s.PerIP.MaxAddresses, 1, MaxSessionAddresses)
}

func (v *validator) upstreamAuth(name string, u Upstream) {
	path := joinKey(joinKey("upstreams", name), "auth")
	a := u.Auth
	at := func(f string) string { return joinKey(path, f) }
	if a.Type == "" {
		if a != (UpstreamAuth{}) {
			v.add(at("type"), "auth settings need a type", authTypes...)
		}
		return
	}
	v.oneOf(at("type"), "auth type", a.Type, authTypes)
	switch a.Type {
	case AuthClientCredentials:
		id, secret := strings.TrimSpace(a.ClientID) != "", strings.TrimSpace(a.ClientSecret) != ""
		switch {
		case id && !secret:
			v.add(at("client_secret"), "client_id is set but client_secret is empty: set both, or neither with optional: true")
		case !id && secret:
			v.add(at("client_id"), "client_secret is set but client_id is empty: set both, or neither with optional: true")
		case !id && !a.Optional:
			v.add(at("client_id"), "client credentials are required (optional is false): set client_id and client_secret")
		}
		if tu, err := url.Parse(a.TokenURL); err != nil || (!tu.IsAbs() && !strings.HasPrefix(a.TokenURL, "/")) ||
			(tu.IsAbs() && (tu.Scheme != "http" && tu.Scheme != "https" || tu.Host == "" || tu.User != nil)) {
			v.add(at("token_url"), fmt.Sprintf("%q is neither a path such as /v1/auth_tokens/token/ nor an http(s) URL without credentials", a.TokenURL))
		}
		if a.HeaderName != "" || a.HeaderValue != "" {
			v.add(at("header_name"), "header_name and header_value are for type header")
		}
	case AuthHeader:
		switch {
		case !isToken(a.HeaderName):
			v.add(at("header_name"), fmt.Sprintf("%q is not a header name", a.HeaderName))
		case slices.Contains(forwardingFields, http.CanonicalHeaderKey(a.HeaderName)):
			v.add(at("header_name"), fmt.Sprintf("%q is set or removed by the forwarding itself (framing, hop-by-hop or Host), so the credential would not reach the upstream; use a field such as Authorization or X-Api-Key", a.HeaderName))
		}
		if strings.TrimSpace(a.HeaderValue) == "" && !a.Optional {
			v.add(at("header_value"), "a header credential is required (optional is false)")
		}
		if strings.ContainsFunc(a.HeaderValue, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			v.add(at("header_value"), "the value contains a control character (a line break, NUL, DEL, …), which no request can carry")
		}
		if a.ClientID != "" || a.ClientSecret != "" {
			v.add(at("client_id"), "client_id and client_secret are for type client_credentials")
		}
	}
	if a.APIClient != "" && !v.hasClient(a.APIClient) {
		v.add(at("api_client"), fmt.Sprintf("no api_clients.clients entry has id %q", a.APIClient))
	}
}

// forwardingFields are the header fields the forwarding sets or removes
// itself: a credential written into one never reaches the upstream as
// written.
var forwardingFields = []string{"Host", "Content-Length", "Transfer-Encoding", "Connection",
	"Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade"}

func (v *validator) hasClient(id string) bool {
	for _, c := range v.c.APIClients.Clients {
		if c.ID == id {
			return true
		}
	}
	return false
}

func (v *validator) apiClients() {
	ac := v.c.APIClients
	plans := sortedKeys(ac.Plans)
	for _, name := range plans {
		path := joinKey("api_clients.plans", name)
		if !planName.MatchString(name) {
			v.add(path, fmt.Sprintf("plan name %q must be lower-case letters, digits, _ and -, starting with a letter or digit", name))
		}
		windows := map[time.Duration]int{}
		for j, s := range ac.Plans[name] {
			l, err := ParseLimit(s, 0)
			if err != nil {
				v.add(indexPath(path, j), err.Error())
				continue
			}
			if prev, dup := windows[l.Window]; dup {
				v.add(indexPath(path, j), fmt.Sprintf("[%d] already has this window: one limit per window", prev))
			}
			windows[l.Window] = j
		}
	}
	ids, hashes := map[string]int{}, map[string]int{}
	for i, c := range ac.Clients {
		path := indexPath("api_clients.clients", i)
		at := func(f string) string { return joinKey(path, f) }
		switch j, dup := ids[c.ID]; {
		case !apiClientID.MatchString(c.ID):
			v.add(at("id"), fmt.Sprintf("client id %q must be 1 to 64 letters, digits, ., _ and -, starting with a letter or digit", c.ID))
		case dup:
			v.add(at("id"), fmt.Sprintf("client id %q is already used by clients[%d]", c.ID, j))
		default:
			ids[c.ID] = i
		}
		if !hasKey(ac.Plans, c.Plan) {
			v.add(at("plan"), fmt.Sprintf("no plan named %q", c.Plan), plans...)
		}
		if h := c.TokenSHA256; h != "" {
			b, err := hex.DecodeString(h)
			if err != nil || len(b) != 32 {
				v.add(at("token_sha256"), "must be 64 hexadecimal digits: the output of `printf %s TOKEN | sha256sum`")
			} else if j, dup := hashes[strings.ToLower(h)]; dup {
				v.add(at("token_sha256"), fmt.Sprintf("is already the token of clients[%d]", j))
			} else {
				hashes[strings.ToLower(h)] = i
			}
		}
	}
}
