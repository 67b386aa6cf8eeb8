package redisstore

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults for the zero fields of Options.
const (
	// DefaultTimeout bounds one Take, round trip included.
	DefaultTimeout = 100 * time.Millisecond
	// DefaultKeyPrefix starts every key the store writes.
	DefaultKeyPrefix = "fg:"
	// DefaultCacheSize is how many keys the over-limit cache holds.
	DefaultCacheSize = 1 << 16
	// DefaultPort is the port of an address given without one.
	DefaultPort = 6379
)

// Options configures a Store. The zero value is not usable: Addrs is
// required. Every other zero field takes its default. ParseURL makes
// Options from the URL an operator writes.
type Options struct {
	// Addrs are the Redis (or Valkey) servers, as host:port. One address
	// names a single server or any node of a Redis Cluster: the store asks
	// the server which it is. Several addresses name nodes of one Redis
	// Cluster; one reachable node is enough to find the others.
	Addrs []string
	// Username and Password authenticate (AUTH); Username may be empty
	// (the default user, or Redis before 6 with requirepass).
	Username, Password string
	// DB is the database number (SELECT). It must be 0 for a cluster.
	DB int
	// TLS, when not nil, makes connections use TLS with this
	// configuration (ParseURL sets an empty one for rediss://, which
	// verifies the server against the system's roots).
	TLS *tls.Config
	// Timeout bounds each Take and Ping, round trip included. Default
	// DefaultTimeout (100ms). Takes that start within a tenth of Timeout
	// share one deadline (one timer for many), so each waits at most
	// Timeout and at least nine tenths of it; a Take whose context ends
	// earlier ends earlier.
	Timeout time.Duration
	// KeyPrefix starts every Redis key the store writes, so that several
	// applications (or floodgate deployments) can share one Redis.
	// Default DefaultKeyPrefix ("fg:"). It must not contain "{" or "}",
	// which would change the keys' cluster hash slot.
	KeyPrefix string
	// KeySecret, when set, keys the hash that replaces the caller's key in
	// Redis key names (HMAC-SHA-256 instead of SHA-256), so that whoever
	// reads Redis cannot test guesses such as every IPv4 address against
	// the names. Every replica sharing the Redis must use the same secret.
	// Changing it starts every counter afresh.
	KeySecret []byte
	// CacheSize is how many keys the over-limit cache keeps: keys whose
	// last Take was refused, whose next Takes are refused without a round
	// trip while their counters cannot have refilled (see the package
	// comment). Default DefaultCacheSize (65536); negative disables the
	// cache.
	CacheSize int
	// Logger receives connection state changes: connected, unreachable,
	// reachable again. It never receives keys. Default: no logging.
	Logger *slog.Logger
}

// validate checks o and returns it with defaults filled in.
func (o Options) validate() (Options, error) {
	var errs []error
	if len(o.Addrs) == 0 {
		errs = append(errs, errors.New("no address"))
	}
	for _, a := range o.Addrs {
		if _, _, err := parseHostPort(a, false); err != nil {
			errs = append(errs, err)
		}
	}
	if o.DB < 0 {
		errs = append(errs, fmt.Errorf("database %d must not be negative", o.DB))
	}
	if o.DB != 0 && len(o.Addrs) > 1 {
		errs = append(errs, fmt.Errorf("database %d: a Redis Cluster (several addresses) has only database 0", o.DB))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %v must not be negative", o.Timeout))
	}
	if strings.ContainsAny(o.KeyPrefix, "{}") {
		errs = append(errs, fmt.Errorf("key prefix %q must not contain { or }", o.KeyPrefix))
	}
	if err := errors.Join(errs...); err != nil {
		return o, err
	}
	o.Addrs = slices.Clone(o.Addrs)
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	return o, nil
}

// URL query parameters that ParseURL reads.
var urlParams = []string{"timeout", "key_prefix", "cache_size"}

// ParseURL parses the URL of a Redis store, as operators write it in
// configuration or on the command line:
//
//	redis://[USER:PASSWORD@]HOST[:PORT][/DB][?PARAMS]
//	rediss://…                              TLS, verified against the system's roots
//	redis://HOST1:PORT1,HOST2:PORT2,HOST3:PORT3   nodes of a Redis Cluster
//
// valkey:// and valkeys:// mean the same as redis:// and rediss://. PORT
// defaults to 6379 and DB to 0; IPv6 hosts are written in brackets
// ([::1]:6379). USER and PASSWORD are percent-decoded; write only
// :PASSWORD@ for the default user. PARAMS are
// timeout=DURATION (Options.Timeout, such as 50ms), key_prefix=PREFIX
// (Options.KeySecret is deliberately not a parameter) and cache_size=N
// (Options.CacheSize; 0 disables the cache). Anything else is an error.
//
// The result's other fields are zero: New fills in the defaults. The
// errors name what is wrong and what is allowed, and never contain the
// password.
func ParseURL(s string) (Options, error) {
	var o Options
	s = strings.TrimSpace(s)
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return o, errors.New("redisstore: url must start with redis://, rediss://, valkey:// or valkeys://")
	}
	switch strings.ToLower(scheme) {
	case "redis", "valkey":
	case "rediss", "valkeys":
		o.TLS = &tls.Config{}
	default:
		return o, fmt.Errorf("redisstore: url scheme %q is not redis, rediss, valkey or valkeys", scheme)
	}
	if strings.Contains(rest, "#") {
		return o, errors.New("redisstore: url must not have a #fragment")
	}
	authority, rest := rest, ""
	if i := strings.IndexAny(authority, "/?"); i >= 0 {
		authority, rest = authority[:i], authority[i:]
	}
	if !strings.Contains(authority, "@") && strings.Contains(rest, "@") {
		// A password with "/" or "?" in it, not %-encoded: the authority
		// ended inside it. An error naming the address would name the
		// password's first part.
		return o, errors.New("redisstore: url has \"@\" after its host: a password with \"/\" or \"?\" must be %-encoded (%2F, %3F)")
	}
	path, query, _ := strings.Cut(rest, "?")

	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo := authority[:i]
		authority = authority[i+1:]
		user, pass, ok := strings.Cut(userinfo, ":")
		if !ok {
			return o, errors.New("redisstore: url credentials must be USER:PASSWORD@ or :PASSWORD@")
		}
		var err error
		if o.Username, err = url.PathUnescape(user); err != nil {
			return o, errors.New("redisstore: url user name has a bad %-escape")
		}
		if o.Password, err = url.PathUnescape(pass); err != nil {
			return o, errors.New("redisstore: url password has a bad %-escape")
		}
	}
	if authority == "" {
		return o, errors.New("redisstore: url has no host")
	}
	for _, a := range strings.Split(authority, ",") {
		host, port, err := parseHostPort(a, true)
		if err != nil {
			return o, fmt.Errorf("redisstore: url: %w", err)
		}
		o.Addrs = append(o.Addrs, net.JoinHostPort(host, strconv.Itoa(port)))
	}

	switch db := strings.TrimPrefix(path, "/"); {
	case db == "":
	case len(path) > 0 && isDigits(db) && len(db) <= 9:
		o.DB, _ = strconv.Atoi(db)
	default:
		return o, fmt.Errorf("redisstore: url path %q must be /DB, a database number", path)
	}
	if o.DB != 0 && len(o.Addrs) > 1 {
		return o, fmt.Errorf("redisstore: url names %d cluster nodes and database %d; a cluster has only database 0", len(o.Addrs), o.DB)
	}

	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return o, errors.New("redisstore: url query is not NAME=VALUE&…")
		}
		for name, vals := range q {
			if !slices.Contains(urlParams, name) {
				return o, fmt.Errorf("redisstore: url parameter %q is unknown (allowed: %s)", name, strings.Join(urlParams, ", "))
			}
			if len(vals) != 1 {
				return o, fmt.Errorf("redisstore: url parameter %q is given %d times", name, len(vals))
			}
		}
		if v, ok := q["timeout"]; ok {
			d, err := time.ParseDuration(v[0])
			if err != nil || d <= 0 {
				return o, fmt.Errorf("redisstore: url parameter timeout=%q is not a positive duration (such as 100ms)", v[0])
			}
			o.Timeout = d
		}
		if v, ok := q["key_prefix"]; ok {
			if v[0] == "" || strings.ContainsAny(v[0], "{}") {
				return o, fmt.Errorf("redisstore: url parameter key_prefix=%q must be non-empty, without { or }", v[0])
			}
			o.KeyPrefix = v[0]
		}
		if v, ok := q["cache_size"]; ok {
			n, err := strconv.Atoi(v[0])
			if err != nil || n < 0 || !isDigits(v[0]) {
				return o, fmt.Errorf("redisstore: url parameter cache_size=%q is not a whole number (0 disables the cache)", v[0])
			}
			o.CacheSize = n
			if n == 0 {
				o.CacheSize = -1
			}
		}
	}
	return o, nil
}

// parseHostPort parses HOST[:PORT] (or [IPv6][:PORT]). The port may be
// left out only when defaultPort is set.
func parseHostPort(a string, defaultPort bool) (string, int, error) {
	host, portStr, err := net.SplitHostPort(a)
	if err != nil {
		// Without a port: a name, an IPv4 address or a bracketed IPv6 one.
		if !defaultPort || strings.Count(a, ":") > 0 && !strings.HasPrefix(a, "[") {
			return "", 0, fmt.Errorf("address %q is not HOST:PORT", a)
		}
		host, portStr = strings.TrimSuffix(strings.TrimPrefix(a, "["), "]"), strconv.Itoa(DefaultPort)
		if strings.HasPrefix(a, "[") != strings.HasSuffix(a, "]") {
			return "", 0, fmt.Errorf("address %q has unbalanced brackets", a)
		}
	}
	if host == "" {
		return "", 0, fmt.Errorf("address %q has no host", a)
	}
	if strings.Contains(host, ":") || strings.HasPrefix(a, "[") {
		if ip, err := netip.ParseAddr(host); err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", 0, fmt.Errorf("address %q: host %q is not an IPv6 address", a, host)
		}
	} else if !validHostname(host) {
		return "", 0, fmt.Errorf("address %q: host %q is not a host name or IP address", a, host)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || !isDigits(portStr) || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("address %q: port %q is not a number from 1 to 65535", a, portStr)
	}
	return host, port, nil
}

// validHostname reports whether h is made of letters, digits, dots,
// hyphens and underscores (which covers IPv4 addresses), at most 253 long.
func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, c := range []byte(h) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// String formats o as a URL that ParseURL reads back, with the password
// replaced by "xxxxx" so that it can be logged. Fields that a URL cannot
// express (KeySecret, Logger, a custom TLS configuration) are left out.
func (o Options) String() string { return o.format(true) }

func (o Options) format(redact bool) string {
	var b strings.Builder
	if o.TLS != nil {
		b.WriteString("rediss://")
	} else {
		b.WriteString("redis://")
	}
	if o.Username != "" || o.Password != "" {
		b.WriteString(escapeUserinfo(o.Username))
		b.WriteByte(':')
		if redact && o.Password != "" {
			b.WriteString("xxxxx")
		} else {
			b.WriteString(escapeUserinfo(o.Password))
		}
		b.WriteByte('@')
	}
	b.WriteString(strings.Join(o.Addrs, ","))
	if o.DB != 0 {
		b.WriteString("/" + strconv.Itoa(o.DB))
	}
	q := url.Values{}
	if o.Timeout != 0 {
		q.Set("timeout", o.Timeout.String())
	}
	if o.KeyPrefix != "" {
		q.Set("key_prefix", o.KeyPrefix)
	}
	switch {
	case o.CacheSize < 0:
		q.Set("cache_size", "0")
	case o.CacheSize > 0:
		q.Set("cache_size", strconv.Itoa(o.CacheSize))
	}
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	return b.String()
}

// escapeUserinfo percent-encodes everything but unreserved characters.
func escapeUserinfo(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '.', c == '_', c == '~':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
