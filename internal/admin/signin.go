package admin

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"html/template"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/securecookie"
	"golang.org/x/time/rate"
)

// Browser sign-in settings.
const (
	// signInCookie holds a signed sign-in (never the token): Path=/admin/,
	// HttpOnly, SameSite=Strict, Secure when the listener has TLS.
	signInCookie = "floodgate_admin"
	// signInTTL is how long a sign-in lasts.
	signInTTL = 12 * time.Hour
	// csrfHeader carries the sign-in's CSRF token on the page's PUT
	// /admin/mode; the sign-out form sends it as the field "csrf".
	csrfHeader = "X-Floodgate-CSRF"
	// Failed sign-ins: a burst of failedBurst, then one every
	// failedEvery; past that the form answers 429 without comparing.
	failedBurst = 5
	failedEvery = 2 * time.Second
)

// signIn lets a browser use the /admin/ endpoints: the form at GET /admin/
// takes the admin token once and sets a cookie holding a signed sign-in,
// which then stands for the token. Scripts keep sending the Bearer
// header. The signing key is drawn at start: a restart signs everyone
// out. A sign-in is bound to the token it was made with (an HMAC of it),
// so changing admin.token and reloading signs everyone out too.
//
// A browser that is signed in sends the cookie whichever page makes the
// request; SameSite=Strict keeps other sites' requests from carrying it,
// and every request that changes something must also come from this
// origin (Origin, Sec-Fetch-Site) and carry the sign-in's CSRF token, which
// only a page served to the signed-in browser holds.
type signIn struct {
	cookies *securecookie.SecureCookie
	key     []byte // binds a sign-in to the token
	now     func() time.Time
	page    *template.Template
	csp     string

	mu      sync.Mutex
	failed  *rate.Limiter
	revoked map[string]time.Time // CSRF tokens of signed-out sign-ins → their expiry
}

// signedIn is what the cookie holds.
type signedIn struct {
	Expires int64  `json:"e"` // Unix seconds
	CSRF    string `json:"c"` // random; also names the sign-in for sign-out
	Bound   string `json:"b"` // HMAC of the admin token, base64
}

func newSignIn(now func() time.Time, page *template.Template, csp string) *signIn {
	sc := securecookie.New(securecookie.GenerateRandomKey(64), nil)
	sc.SetSerializer(securecookie.JSONEncoder{})
	sc.MaxAge(int(signInTTL / time.Second))
	sc.MaxLength(1024)
	return &signIn{
		cookies: sc,
		key:     securecookie.GenerateRandomKey(32),
		now:     now,
		page:    page,
		csp:     csp,
		failed:  rate.NewLimiter(rate.Every(failedEvery), failedBurst),
		revoked: map[string]time.Time{},
	}
}

func (s *signIn) bound(token string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(token))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// current returns the request's sign-in when its cookie is valid for
// token, unexpired and not signed out.
func (s *signIn) current(r *http.Request, token string) (signedIn, bool) {
	var in signedIn
	c, err := r.Cookie(signInCookie)
	if err != nil || s.cookies.Decode(signInCookie, c.Value, &in) != nil {
		return signedIn{}, false
	}
	if s.now().Unix() >= in.Expires || !hmac.Equal([]byte(in.Bound), []byte(s.bound(token))) {
		return signedIn{}, false
	}
	s.mu.Lock()
	_, out := s.revoked[in.CSRF]
	s.mu.Unlock()
	return in, !out
}

// sameOrigin reports whether r, which changes something, comes from a
// page of this listener carrying in's CSRF token (header, or form field
// for the sign-out form).
func sameOrigin(r *http.Request, in signedIn, formToken string) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != origin(r) {
		return false
	}
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = formToken
	}
	return in.CSRF != "" && subtle.ConstantTimeCompare([]byte(got), []byte(in.CSRF)) == 1
}

func origin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

type signedInKey struct{}

// signedInFrom returns the sign-in auth admitted the request with, if it
// was a cookie.
func signedInFrom(ctx context.Context) (signedIn, bool) {
	in, ok := ctx.Value(signedInKey{}).(signedIn)
	return in, ok
}

// signInPage is what the sign-in template shows.
type signInPage struct {
	Message    string
	RetryAfter int
}

// form answers code with the sign-in page.
func (s *signIn) form(w http.ResponseWriter, code int, p signInPage) {
	var buf bytes.Buffer
	if err := s.page.ExecuteTemplate(&buf, "signin", p); err != nil {
		problem(w, http.StatusInternalServerError, "sign-in page: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", s.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: with it, forms send "Origin: null"
	if code == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="floodgate admin"`)
	}
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// signInHandler serves POST /admin/signin: the form's token, compared in
// constant time (as SHA-256 digests, so not even its length shows), sets
// the cookie and sends the browser to the dashboard.
func (a *api) signInHandler(w http.ResponseWriter, r *http.Request) {
	s := a.in
	token := a.s.Current().Config().Config.Admin.Token
	if token == "" {
		// Nothing to sign in with: the dashboard answers loopback peers.
		http.Redirect(w, r, "/admin/", http.StatusSeeOther)
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); (site != "" && site != "same-origin" && site != "none") ||
		(r.Header.Get("Origin") != "" && r.Header.Get("Origin") != origin(r)) {
		noteRefusal(w, reasonCrossOrigin)
		problem(w, http.StatusForbidden, "sign in from the form at /admin/ of this listener")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	got := r.PostFormValue("token")
	now := s.now()
	s.mu.Lock()
	if tokens := s.failed.TokensAt(now); tokens < 1 {
		wait := time.Duration((1 - tokens) * float64(failedEvery))
		s.mu.Unlock()
		noteRefusal(w, reasonThrottled)
		s.form(w, http.StatusTooManyRequests, signInPage{
			Message:    "Too many wrong tokens: wait a moment, then try again.",
			RetryAfter: max(int((wait+time.Second-1)/time.Second), 1),
		})
		return
	}
	s.mu.Unlock()
	gotSum, wantSum := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(gotSum[:], wantSum[:]) != 1 {
		s.mu.Lock()
		s.failed.AllowN(now, 1)
		s.mu.Unlock()
		noteRefusal(w, reasonWrong)
		s.form(w, http.StatusUnauthorized, signInPage{Message: "That is not the admin token (admin.token)."})
		return
	}
	in := signedIn{Expires: now.Add(signInTTL).Unix(), CSRF: rand.Text(), Bound: s.bound(token)}
	v, err := s.cookies.Encode(signInCookie, in)
	if err != nil {
		problem(w, http.StatusInternalServerError, "cannot sign in: "+err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: signInCookie, Value: v, Path: "/admin/", MaxAge: int(signInTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/admin/", http.StatusSeeOther)
}

// signOut serves POST /admin/signout, the dashboard's sign-out form: it
// ends the sign-in (for this process: the cookie is refused from now on,
// even if a copy of it is sent) and clears the cookie.
func (a *api) signOut(w http.ResponseWriter, r *http.Request) {
	s := a.in
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	in, ok := s.current(r, a.s.Current().Config().Config.Admin.Token)
	if ok && !sameOrigin(r, in, r.PostFormValue("csrf")) {
		noteRefusal(w, reasonCrossOrigin)
		problem(w, http.StatusForbidden, "sign out with the dashboard's button")
		return
	}
	if ok {
		now := s.now()
		s.mu.Lock()
		for id, exp := range s.revoked {
			if now.Unix() >= exp.Unix() {
				delete(s.revoked, id)
			}
		}
		s.revoked[in.CSRF] = time.Unix(in.Expires, 0)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{
		Name: signInCookie, Value: "", Path: "/admin/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/admin/", http.StatusSeeOther)
}
