package session

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/floodgate/floodgate/internal/httpsyntax"
	"github.com/gorilla/securecookie"
)

// Defaults and bounds of Options.
const (
	// DefaultName is the cookie name when Options.Name is empty.
	DefaultName = "ovSession"
	// DefaultMaxAge is the session lifetime when Options.MaxAge is zero:
	// longer than any per-session counting window of the Openverse rules,
	// short enough that a copied or harvested cookie soon stops working.
	DefaultMaxAge = time.Hour
	// MinSecretLen is the shortest secret New accepts, in bytes: the
	// HMAC-SHA256 key should be at least as long as its output.
	MinSecretLen = 32
	// MaxValueLen is the longest cookie value Verify decodes. Values
	// issued by a Manager are about 120 bytes; anything longer is
	// rejected before any decoding work.
	MaxValueLen = 256
	// maxCandidates bounds how many cookies with the session's name
	// Verify examines in one request. A sibling domain can plant cookies
	// of that name which browsers send before the real one (longer paths
	// first): one for each path prefix of the request's path, two a
	// segment: 9 for Openverse's longest API path,
	// /v1/images/{id}/related/. 16 outlasts any path of fewer than 7
	// segments and bounds the work a hostile header can ask for: each
	// candidate is an HMAC check, 16 about 30 µs (BenchmarkVerifyPlanted;
	// one valid cookie, first seen: 4 µs).
	maxCandidates = 16
	// clockSkew is how far in the future an issue instant may lie
	// (replicas' clocks differ a little).
	clockSkew = time.Minute
	// idLen is the number of random bytes in a session id (128 bits).
	idLen = 16
	// payloadLen is the signed payload: 8 bytes of issue instant (Unix
	// seconds, big-endian), then the id.
	payloadLen = 8 + idLen
)

// Options configure a Manager. Only Secrets is required.
type Options struct {
	// Name is the cookie name; default DefaultName ("ovSession").
	Name string
	// Secrets are HMAC keys, newest first, each at least MinSecretLen
	// bytes. The first signs new cookies; all of them verify. See
	// SplitSecrets for reading them from HMAC_SIGNING_SECRET.
	Secrets [][]byte
	// MaxAge is how long a session is valid after it was issued; default
	// DefaultMaxAge (1h), at least one second.
	MaxAge time.Duration
	// Path is the cookie's Path attribute; default "/".
	Path string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// A Manager issues and verifies signed session cookies. It is immutable
// after New and safe for concurrent use.
type Manager struct {
	name   string
	path   string
	maxAge time.Duration
	now    func() time.Time
	codecs []*securecookie.SecureCookie // codecs[0] signs
	seen   *verifiedCache               // nil: every value is decoded
}

// verifiedCache remembers cookie values that verified, with their session
// id and issue time, so that a session's later requests cost a map lookup
// instead of a MAC and a decode (2.5 µs and 26 allocations). Only values
// that verified enter it, each exactly as sent: a hit is the same bytes
// verified before, and expiry is checked again on every hit. At most
// verifiedMax entries; a full cache forgets one at random per new entry.
// One per Manager: new secrets (a reload) start an empty one.
type verifiedCache struct {
	mu sync.RWMutex
	m  map[string]verifiedEntry
}

type verifiedEntry struct {
	id     string
	issued time.Time
}

// verifiedMax bounds the cache: about 3 MiB at ~200 bytes an entry.
const verifiedMax = 1 << 14

func (c *verifiedCache) get(val string) (verifiedEntry, bool) {
	c.mu.RLock()
	e, ok := c.m[val]
	c.mu.RUnlock()
	return e, ok
}

func (c *verifiedCache) put(val string, e verifiedEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= verifiedMax {
		for k := range c.m { // map order is random: a random victim
			delete(c.m, k)
			break
		}
	}
	c.m[strings.Clone(val)] = e // not a slice of the whole Cookie field
}

// idEncoding encodes session ids: unpadded base64url, strict so that one
// id has exactly one spelling.
var idEncoding = base64.RawURLEncoding.Strict()

// Errors from decoding a cookie value. They never contain the value or
// the session id.
var (
	errMalformed = errors.New("session: malformed cookie value")
	errOversized = errors.New("session: cookie value too long")
	errSignature = errors.New("session: signature does not verify under any secret")
	errExpired   = errors.New("session: cookie expired")
	errFuture    = errors.New("session: cookie issued in the future")
)

// New returns a Manager for o. It reports every problem with o at once.
func New(o Options) (*Manager, error) {
	var errs []error
	if o.Name == "" {
		o.Name = DefaultName
	} else if !validName(o.Name) {
		errs = append(errs, fmt.Errorf("session: cookie name %q is not a valid cookie name (letters, digits and !#$%%&'*+-.^_`|~ only)", o.Name))
	}
	if len(o.Secrets) == 0 {
		errs = append(errs, errors.New("session: no signing secret (set HMAC_SIGNING_SECRET)"))
	}
	for i, s := range o.Secrets {
		if len(s) < MinSecretLen {
			errs = append(errs, fmt.Errorf("session: secret %d is %d bytes long, want at least %d", i+1, len(s), MinSecretLen))
		}
	}
	switch {
	case o.MaxAge == 0:
		o.MaxAge = DefaultMaxAge
	case o.MaxAge < time.Second:
		errs = append(errs, fmt.Errorf("session: max age %v is shorter than one second", o.MaxAge))
	}
	if o.Path == "" {
		o.Path = "/"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m := &Manager{name: o.Name, path: o.Path, maxAge: o.MaxAge.Truncate(time.Second), now: o.Now,
		seen: &verifiedCache{m: map[string]verifiedEntry{}}}
	for _, s := range o.Secrets {
		c := securecookie.New(append([]byte(nil), s...), nil).
			SetSerializer(securecookie.NopEncoder{}).
			MaxLength(MaxValueLen).
			MaxAge(0) // expiry is checked against the Manager's clock
		m.codecs = append(m.codecs, c)
	}
	return m, nil
}

// SplitSecrets splits a comma-separated list of secrets, as in
// HMAC_SIGNING_SECRET="new-secret,old-secret", trimming spaces around each
// and skipping empty ones. A single secret without commas is a list of one.
func SplitSecrets(s string) [][]byte {
	var out [][]byte
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, []byte(part))
		}
	}
	return out
}

// Name returns the cookie name.
func (m *Manager) Name() string { return m.name }

// MaxAge returns how long a session is valid after it was issued.
func (m *Manager) MaxAge() time.Duration { return m.maxAge }

// Verify looks for the session cookie in r's Cookie headers. present
// reports whether a cookie with the session's name was sent at all; valid
// whether one of them (at most maxCandidates are examined) was signed by one of the
// secrets and has not expired, in which case id is its session id. A
// present but invalid cookie must be treated as no session. Verify never
// panics; it allocates only to decode a candidate value.
func (m *Manager) Verify(r *http.Request) (id string, present, valid bool) {
	n := 0
	for _, line := range r.Header["Cookie"] {
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			name, val, ok := strings.Cut(part, "=")
			if !ok || strings.TrimSpace(name) != m.name {
				continue
			}
			present = true
			if n++; n > maxCandidates {
				return "", true, false
			}
			if id, err := m.decode(val); err == nil {
				return id, true, true
			}
		}
	}
	return "", present, false
}

// decode checks one raw cookie value and returns the session id in it.
func (m *Manager) decode(val string) (string, error) {
	val = strings.TrimSpace(val)
	if len(val) > 1 && val[0] == '"' && val[len(val)-1] == '"' {
		val = val[1 : len(val)-1]
	}
	if len(val) > MaxValueLen {
		return "", errOversized
	}
	if val == "" {
		return "", errMalformed
	}
	if m.seen != nil {
		if e, ok := m.seen.get(val); ok {
			if err := m.fresh(e.issued); err != nil {
				return "", err
			}
			return e.id, nil
		}
	}
	var b []byte
	var err error
	for _, c := range m.codecs {
		if err = c.Decode(m.name, val, &b); err == nil || !errors.Is(err, securecookie.ErrMacInvalid) {
			break
		}
	}
	switch {
	case errors.Is(err, securecookie.ErrMacInvalid):
		return "", errSignature
	case err != nil, len(b) != payloadLen:
		return "", errMalformed
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(b[:8])), 0)
	if err := m.fresh(issued); err != nil {
		return "", err
	}
	id := idEncoding.EncodeToString(b[8:])
	if m.seen != nil {
		m.seen.put(val, verifiedEntry{id, issued})
	}
	return id, nil
}

// fresh checks a session's issue time against the clock: not in the
// future (beyond clockSkew), not older than the max age.
func (m *Manager) fresh(issued time.Time) error {
	now := m.now()
	if issued.After(now.Add(clockSkew)) {
		return errFuture
	}
	if !now.Before(issued.Add(m.maxAge)) {
		return errExpired
	}
	return nil
}

// Issue starts a new session: it draws a random 128-bit id, sets the
// signed cookie on w and returns the id (unpadded base64url, 22
// characters). It fails only if the system's random source does.
func (m *Manager) Issue(w http.ResponseWriter) (id string, err error) {
	id, c, err := m.New()
	if err != nil {
		return "", err
	}
	http.SetCookie(w, c)
	return id, nil
}

// New draws a new session as Issue does and returns its id and cookie,
// for a caller that sets the cookie itself.
func (m *Manager) New() (id string, c *http.Cookie, err error) {
	var raw [idLen]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", nil, fmt.Errorf("session: draw id: %w", err)
	}
	id = idEncoding.EncodeToString(raw[:])
	if c = m.Cookie(id); c == nil {
		return "", nil, errors.New("session: sign cookie failed")
	}
	return id, c, nil
}

// Cookie returns the signed cookie for session id, issued now, with
// HttpOnly, Secure, SameSite=Lax, the Manager's path and max age. It
// returns nil if id is not a session id as Issue returns them.
func (m *Manager) Cookie(id string) *http.Cookie {
	var p [payloadLen]byte
	if idEncoding.DecodedLen(len(id)) != idLen {
		return nil
	}
	if n, err := idEncoding.Decode(p[8:], []byte(id)); err != nil || n != idLen {
		return nil
	}
	now := m.now()
	binary.BigEndian.PutUint64(p[:8], uint64(now.Unix()))
	v, err := m.codecs[0].Encode(m.name, p[:])
	if err != nil {
		return nil
	}
	return &http.Cookie{
		Name:     m.name,
		Value:    v,
		Path:     m.path,
		MaxAge:   int(m.maxAge / time.Second),
		Expires:  now.Add(m.maxAge).UTC(),
		HttpOnly: true,
		Secure:   true,
		SameSite: http.SameSiteLaxMode,
	}
}

// StripCookie removes every cookie with the session's name from the Cookie
// headers in h and keeps the others, in order. A Cookie header left empty
// is removed. Use it on requests forwarded to the frontend upstream.
func (m *Manager) StripCookie(h http.Header) {
	lines := h["Cookie"]
	found := false
	for _, l := range lines {
		if strings.Contains(l, m.name) {
			found = true
			break
		}
	}
	if !found {
		return
	}
	out := make([]string, 0, len(lines))
	var b strings.Builder
	for _, line := range lines {
		b.Reset()
		for line != "" {
			var part string
			part, line, _ = strings.Cut(line, ";")
			name, _, _ := strings.Cut(part, "=")
			part = strings.TrimSpace(part)
			if part == "" || strings.TrimSpace(name) == m.name {
				continue
			}
			if b.Len() > 0 {
				b.WriteString("; ")
			}
			b.WriteString(part)
		}
		if b.Len() > 0 {
			out = append(out, b.String())
		}
	}
	if len(out) == 0 {
		delete(h, "Cookie")
		return
	}
	h["Cookie"] = out
}

// StripSetCookie removes every Set-Cookie header in h that sets a cookie
// with the session's name and keeps the others. Use it on responses from
// the frontend upstream, so only floodgate sets its session cookie.
func (m *Manager) StripSetCookie(h http.Header) {
	lines := h["Set-Cookie"]
	out := lines[:0]
	for _, l := range lines {
		pair, _, _ := strings.Cut(l, ";")
		name, _, _ := strings.Cut(pair, "=")
		if strings.TrimSpace(name) != m.name {
			out = append(out, l)
		}
	}
	switch {
	case len(out) == len(lines):
	case len(out) == 0:
		delete(h, "Set-Cookie")
	default:
		clear(lines[len(out):])
		h["Set-Cookie"] = out
	}
}

// validName reports whether s is an RFC 6265 cookie name (an RFC 9110
// token).
func validName(s string) bool { return httpsyntax.IsToken(s) }
