package session

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/securecookie"
)

var (
	secretA = []byte("0123456789abcdef0123456789abcdef-A")
	secretB = []byte("0123456789abcdef0123456789abcdef-B")
	t0      = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func newManager(t testing.TB, c *clock, secrets ...[]byte) *Manager {
	t.Helper()
	m, err := New(Options{Secrets: secrets, Now: c.Now})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// issue returns a fresh id and its cookie value.
func issue(t testing.TB, m *Manager) (id, value string) {
	t.Helper()
	w := httptest.NewRecorder()
	id, err := m.Issue(w)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	cs := w.Result().Cookies()
	if len(cs) != 1 {
		t.Fatalf("Issue set %d cookies, want 1", len(cs))
	}
	return id, cs[0].Value
}

func request(cookie ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	for _, c := range cookie {
		r.Header.Add("Cookie", c)
	}
	return r
}

func TestIssueSetsAttributes(t *testing.T) {
	c := &clock{t0}
	m := newManager(t, c, secretA)
	w := httptest.NewRecorder()
	id, err := m.Issue(w)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(raw) != 16 {
		t.Fatalf("id %q: %d bytes, %v; want 16 bytes base64url", id, len(raw), err)
	}
	set := w.Header().Get("Set-Cookie")
	for _, want := range []string{"ovSession=", "Path=/", "Max-Age=3600", "HttpOnly", "Secure", "SameSite=Lax", "Expires=Mon, 30 Nov 2026 13:00:00 GMT"} {
		if !strings.Contains(set, want) {
			t.Errorf("Set-Cookie = %q, missing %q", set, want)
		}
	}
	if strings.Contains(set, id) {
		t.Errorf("Set-Cookie %q shows the session id in clear", set)
	}
	if id2, _ := issue(t, m); id2 == id {
		t.Errorf("two Issue calls returned the same id %q", id)
	}
}

// hostile returns cookie headers that must be present and invalid.
func hostile(t testing.TB, m *Manager, c *clock) map[string]string {
	_, good := issue(t, m)
	other := newManager(t, c, secretB)
	_, forged := issue(t, other)
	dec, _ := base64.URLEncoding.DecodeString(good)
	flip := bytes.Clone(dec)
	flip[len(flip)/2] ^= 1
	// A correctly signed value with a payload of the wrong length.
	sc := securecookie.New(secretA, nil).SetSerializer(securecookie.NopEncoder{})
	short, err := sc.Encode("ovSession", []byte("tiny"))
	if err != nil {
		t.Fatal(err)
	}
	// A value signed for another cookie name.
	renamed, err := sc.Encode("other", make([]byte, payloadLen))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"empty":          "ovSession=",
		"garbage":        "ovSession=hello",
		"forged":         "ovSession=" + forged,
		"tampered":       "ovSession=" + base64.URLEncoding.EncodeToString(flip),
		"truncated":      "ovSession=" + good[:len(good)-4],
		"extended":       "ovSession=" + good + "AAAA",
		"oversized":      "ovSession=" + strings.Repeat("A", MaxValueLen+1),
		"huge":           "ovSession=" + strings.Repeat("x", 1<<16),
		"not base64":     "ovSession=%%%%%%%%",
		"pipes":          "ovSession=" + base64.URLEncoding.EncodeToString([]byte("||||")),
		"wrong length":   "ovSession=" + short,
		"other name":     "ovSession=" + renamed,
		"quoted garbage": `ovSession="abc"`,
		"only quote":     `ovSession="`,
		"unicode":        "ovSession=ünïcødé",
		"nul":            "ovSession=\x00\x00",
		"many":           strings.Repeat("ovSession=x; ", maxCandidates) + "ovSession=" + good,
	}
}

func TestVerifyHostile(t *testing.T) {
	c := &clock{t0}
	m := newManager(t, c, secretA)
	for name, h := range hostile(t, m, c) {
		t.Run(name, func(t *testing.T) {
			id, present, valid := m.Verify(request(h))
			if id != "" || !present || valid {
				t.Errorf("Verify(%.60q) = %q, %v, %v; want \"\", true, false", h, id, present, valid)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	c := &clock{t0}
	m := newManager(t, c, secretA)
	id, v := issue(t, m)
	tests := []struct {
		name           string
		cookies        []string
		present, valid bool
	}{
		{name: "none", cookies: nil},
		{name: "others only", cookies: []string{"a=1; b=2"}},
		{name: "prefix name", cookies: []string{"ovSessionX=" + v}},
		{name: "case differs", cookies: []string{"ovsession=" + v}},
		{name: "alone", cookies: []string{"ovSession=" + v}, present: true, valid: true},
		{name: "among others", cookies: []string{"a=1; ovSession=" + v + "; b=2"}, present: true, valid: true},
		{name: "spaces", cookies: []string{"a=1;  ovSession = " + v + " ;b=2"}, present: true, valid: true},
		{name: "quoted", cookies: []string{`ovSession="` + v + `"`}, present: true, valid: true},
		{name: "second header", cookies: []string{"a=1", "ovSession=" + v}, present: true, valid: true},
		{name: "tossed first", cookies: []string{"ovSession=forged; ovSession=" + v}, present: true, valid: true},
		// A sibling domain's cookies, one per path prefix of
		// /v1/images/abc/related/ (longer paths are sent first): the
		// visitor keeps its session.
		{name: "planted by a sibling", cookies: []string{strings.Repeat("ovSession="+tampered(v)+"; ", 9) + "ovSession=" + v}, present: true, valid: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotID, present, valid := m.Verify(request(tt.cookies...))
			wantID := ""
			if tt.valid {
				wantID = id
			}
			if gotID != wantID || present != tt.present || valid != tt.valid {
				t.Errorf("Verify(%q) = %q, %v, %v; want %q, %v, %v", tt.cookies, gotID, present, valid, wantID, tt.present, tt.valid)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	c := &clock{t0}
	m, err := New(Options{Secrets: [][]byte{secretA}, MaxAge: 10 * time.Minute, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	id, v := issue(t, m)
	r := request("ovSession=" + v)
	steps := []struct {
		at    time.Duration
		valid bool
	}{
		{0, true},
		{10*time.Minute - time.Second, true},
		{10 * time.Minute, false},
		{24 * time.Hour, false},
		{-30 * time.Second, true}, // a replica's clock slightly behind
		{-2 * time.Minute, false}, // issued in the future
	}
	for _, s := range steps {
		c.t = t0.Add(s.at)
		gotID, present, valid := m.Verify(r)
		if !present || valid != s.valid || (valid && gotID != id) {
			t.Errorf("at t0%+v: Verify = %q, %v, %v; want valid %v", s.at, gotID, present, valid, s.valid)
		}
	}
}

func TestRotation(t *testing.T) {
	c := &clock{t0}
	old := newManager(t, c, secretA)
	idOld, vOld := issue(t, old)
	rotated := newManager(t, c, secretB, secretA)
	idNew, vNew := issue(t, rotated)
	retired := newManager(t, c, secretB)

	tests := []struct {
		name  string
		m     *Manager
		value string
		id    string
		valid bool
	}{
		{"old cookie, rotated manager", rotated, vOld, idOld, true},
		{"new cookie, rotated manager", rotated, vNew, idNew, true},
		{"new cookie, old manager", old, vNew, "", false},
		{"old cookie, old secret retired", retired, vOld, "", false},
		{"new cookie, old secret retired", retired, vNew, idNew, true},
	}
	for _, tt := range tests {
		id, present, valid := tt.m.Verify(request("ovSession=" + tt.value))
		if id != tt.id || !present || valid != tt.valid {
			t.Errorf("%s: Verify = %q, %v, %v; want %q, true, %v", tt.name, id, present, valid, tt.id, tt.valid)
		}
	}
}

// TestDecodeErrorsHideSecrets checks that no decoding error shows the
// session id, the cookie value or a secret.
func TestDecodeErrorsHideSecrets(t *testing.T) {
	c := &clock{t0}
	m := newManager(t, c, secretA)
	id, v := issue(t, m)
	values := []string{v, v + "x", v[:len(v)-3], strings.ToUpper(v)}
	for _, h := range hostile(t, m, c) {
		_, val, _ := strings.Cut(h, "=")
		values = append(values, val)
	}
	for i, at := range []time.Duration{0, 2 * time.Hour, -time.Hour} {
		c.t = t0.Add(at)
		for _, val := range values {
			_, err := m.decode(val)
			if err == nil {
				if i != 0 {
					t.Errorf("decode(%.40q) at t0%+v: no error", val, at)
				}
				continue
			}
			msg := err.Error()
			for _, secret := range []string{id, val, string(secretA), v[:20]} {
				if secret != "" && strings.Contains(msg, secret) {
					t.Errorf("decode error %q contains %.40q", msg, secret)
				}
			}
		}
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(Options{Name: "bad name", Secrets: [][]byte{[]byte("s3cr3t")}, MaxAge: time.Millisecond})
	if err == nil {
		t.Fatal("New accepted bad options")
	}
	for _, want := range []string{`"bad name"`, "secret 1 is 6 bytes", "max age 1ms"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("New error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("New error %q shows the secret", err)
	}
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "HMAC_SIGNING_SECRET") {
		t.Errorf("New without secrets: %v, want an error naming HMAC_SIGNING_SECRET", err)
	}
}

func TestCookieRejectsBadIDs(t *testing.T) {
	m := newManager(t, &clock{t0}, secretA)
	for _, id := range []string{"", "abc", strings.Repeat("A", 23), strings.Repeat("A", 21) + "B", "AAAAAAAAAAAAAAAAAAAA+/"} {
		if c := m.Cookie(id); c != nil {
			t.Errorf("Cookie(%q) = %v, want nil", id, c)
		}
	}
}

func TestSplitSecrets(t *testing.T) {
	got := SplitSecrets(" new , ,old,")
	want := [][]byte{[]byte("new"), []byte("old")}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("SplitSecrets (-got +want):\n%s", diff)
	}
}

func TestStripCookie(t *testing.T) {
	m, err := New(Options{Secrets: [][]byte{secretA}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"others only", []string{"a=1; b=2"}, []string{"a=1; b=2"}},
		{"only ours", []string{"ovSession=x"}, nil},
		{"middle", []string{"a=1; ovSession=x; b=2"}, []string{"a=1; b=2"}},
		{"spaced", []string{"a=1 ;  ovSession = x ;b=2"}, []string{"a=1; b=2"}},
		{"twice", []string{"ovSession=x; a=1; ovSession=y"}, []string{"a=1"}},
		{"lookalikes kept", []string{"ovSessionX=1; xovSession=2; ovsession=3; ovSession=4"}, []string{"ovSessionX=1; xovSession=2; ovsession=3"}},
		{"value mentions name", []string{"a=ovSession"}, []string{"a=ovSession"}},
		{"several headers", []string{"ovSession=x", "a=1; ovSession=y", "b=2"}, []string{"a=1", "b=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{"Accept": {"*/*"}}
			if tt.in != nil {
				h["Cookie"] = append([]string(nil), tt.in...)
			}
			m.StripCookie(h)
			if diff := cmp.Diff(h["Cookie"], tt.want); diff != "" {
				t.Errorf("StripCookie(%q) (-got +want):\n%s", tt.in, diff)
			}
			if _, ok := h["Cookie"]; ok && len(tt.want) == 0 {
				t.Errorf("StripCookie(%q) left an empty Cookie header", tt.in)
			}
			if h.Get("Accept") != "*/*" {
				t.Errorf("StripCookie touched another header")
			}
		})
	}
}

func TestStripSetCookie(t *testing.T) {
	m, err := New(Options{Secrets: [][]byte{secretA}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"others", []string{"a=1; Path=/", "b=2"}, []string{"a=1; Path=/", "b=2"}},
		{"ours", []string{"ovSession=x; Path=/; HttpOnly"}, nil},
		{"mixed", []string{"a=1", " ovSession =x; Path=/", "b=2; Domain=ovSession"}, []string{"a=1", "b=2; Domain=ovSession"}},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.in != nil {
			h["Set-Cookie"] = append([]string(nil), tt.in...)
		}
		m.StripSetCookie(h)
		if diff := cmp.Diff(h["Set-Cookie"], tt.want); diff != "" {
			t.Errorf("%s: StripSetCookie(%q) (-got +want):\n%s", tt.name, tt.in, diff)
		}
		if _, ok := h["Set-Cookie"]; ok && len(tt.want) == 0 {
			t.Errorf("%s: left an empty Set-Cookie header", tt.name)
		}
	}
}

func TestVerifyAllocations(t *testing.T) {
	m := newManager(t, &clock{t0}, secretA)
	_, v := issue(t, m)
	none := request("a=1; b=2")
	if n := testing.AllocsPerRun(100, func() { m.Verify(none) }); n != 0 {
		t.Errorf("Verify without session cookie allocs = %v, want 0", n)
	}
	oversized := request("ovSession=" + strings.Repeat("A", 1000))
	if n := testing.AllocsPerRun(100, func() { m.Verify(oversized) }); n != 0 {
		t.Errorf("Verify with oversized cookie allocs = %v, want 0", n)
	}
	valid := request("ovSession=" + v)
	if n := testing.AllocsPerRun(100, func() { m.Verify(valid) }); n > 16 {
		t.Errorf("Verify with valid cookie allocs = %v, want at most 16", n)
	}
}

// BenchmarkVerify: a session's cookie, verified before (the common
// case: every request of a session after its first) and decoded (its
// first request, or every request without the cache).
func BenchmarkVerify(b *testing.B) {
	for _, tc := range []struct {
		name   string
		cached bool
	}{{"seen", true}, {"decode", false}} {
		b.Run(tc.name, func(b *testing.B) {
			m := newManager(b, &clock{t0}, secretB, secretA)
			if !tc.cached {
				m.seen = nil
			}
			_, v := issue(b, newManager(b, &clock{t0}, secretA))
			r := request("a=1; ovSession=" + v + "; b=2")
			b.ReportAllocs()
			for b.Loop() {
				if _, _, ok := m.Verify(r); !ok {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// BenchmarkVerifyPlanted is the most work one request can ask of Verify:
// the real cookie after maxCandidates-1 well-formed, wrongly signed ones.
func BenchmarkVerifyPlanted(b *testing.B) {
	m := newManager(b, &clock{t0}, secretA)
	_, v := issue(b, m)
	r := request(strings.Repeat("ovSession="+tampered(v)+"; ", maxCandidates-1) + "ovSession=" + v)
	m.seen = nil // every candidate decoded, as for a value seen first
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := m.Verify(r); !ok {
			b.Fatal("invalid")
		}
	}
}

// tampered returns v with one signature byte changed: well-formed, the
// right length, wrongly signed.
func tampered(v string) string {
	raw, err := base64.URLEncoding.DecodeString(v)
	if err != nil {
		panic(err)
	}
	raw[len(raw)-1] ^= 1
	return base64.URLEncoding.EncodeToString(raw)
}

// TestVerifiedCache: a value that verified is remembered exactly as sent,
// a value that did not is never remembered, expiry is checked again on
// every use of a remembered value, and the cache stays bounded.
func TestVerifiedCache(t *testing.T) {
	c := &clock{t0}
	m := newManager(t, c, secretA)
	id, v := issue(t, m)
	for range 2 {
		if got, _, ok := m.Verify(request("ovSession=" + v)); !ok || got != id {
			t.Fatalf("Verify = %q, %v; want %q", got, ok, id)
		}
	}
	if len(m.seen.m) != 1 {
		t.Errorf("%d remembered values, want 1", len(m.seen.m))
	}
	tampered := v[:len(v)-2] + "AA"
	if _, _, ok := m.Verify(request("ovSession=" + tampered)); ok {
		t.Error("a tampered value verified")
	}
	if _, _, ok := m.Verify(request("ovSession=" + tampered)); ok {
		t.Error("a tampered value verified the second time")
	}
	if len(m.seen.m) != 1 {
		t.Errorf("%d remembered values after a tampered one, want 1", len(m.seen.m))
	}
	c.t = c.t.Add(m.MaxAge())
	if _, _, ok := m.Verify(request("ovSession=" + v)); ok {
		t.Error("a remembered value verified after its max age")
	}
	c.t = t0
	for range verifiedMax + 100 {
		_, v := issue(t, m)
		if _, _, ok := m.Verify(request("ovSession=" + v)); !ok {
			t.Fatal("a fresh value did not verify")
		}
	}
	if n := len(m.seen.m); n > verifiedMax {
		t.Errorf("%d remembered values, more than %d", n, verifiedMax)
	}
}

func FuzzVerify(f *testing.F) {
	c := &clock{t0}
	m := newManager(f, c, secretB, secretA)
	_, v := issue(f, m)
	f.Add("ovSession=" + v)
	f.Add("a=1; ovSession=" + v + "; b=2")
	for _, h := range hostile(f, m, c) {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		id, present, valid := m.Verify(request(h))
		if valid && (!present || len(id) != 22) {
			t.Fatalf("Verify(%q) = %q, %v, %v", h, id, present, valid)
		}
		if !valid && id != "" {
			t.Fatalf("Verify(%q) = %q on an invalid cookie", h, id)
		}
		hd := http.Header{"Cookie": {h}}
		m.StripCookie(hd)
		if _, present, _ := m.Verify(&http.Request{Header: hd}); present {
			t.Fatalf("after StripCookie(%q) = %q, the cookie is still present", h, hd["Cookie"])
		}
	})
}
