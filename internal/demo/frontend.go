package demo

import (
	"bytes"
	"crypto/rand"
	"embed"
	"html/template"
	"net/http"
)

//go:embed templates/*.html
var templateFS embed.FS

// templates are parsed once; a broken template fails every test of this
// package, so Must cannot panic in a built binary.
var templates = template.Must(template.ParseFS(templateFS, "templates/*.html"))

// pageData is what the templates are executed with.
type pageData struct {
	Query string // the search box's value
	Type  string // "image" or "audio"
	Nonce string // of the inline script and style
}

// frontend is the handler Frontend returns.
type frontend struct{}

var _ http.Handler = frontend{}

// Frontend returns the demo's "web frontend":
//
//	GET /             the search page; sets the cookie ov_theme=light
//	GET /search       the same page with q and type (image, audio) prefilled
//	GET /favicon.ico  204
//
// Any other path is a 404 HTML page, another method on those paths 405.
// The page is accessible (lang, a labelled search form with role="search",
// an aria-live status and a role="alert" error region) and loads nothing
// but itself: its inline script and style carry a per-answer nonce named
// in a Content-Security-Policy that allows only same-origin fetches and
// data: images. The script searches with
// fetch('/api/search/{image|audio}/?q=…&page_size=20'), renders title,
// creator, license and thumbnail of each result, and on a 429 shows "You
// are searching too fast." once, with "Please try again in N seconds."
// counting down from Retry-After (the problem+json detail, which says the
// same with a fixed N, only without Retry-After); 403, 503, other errors
// and network failures get their own messages.
//
// The handler is safe for concurrent use.
func Frontend() http.Handler { return frontend{} }

func (frontend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/", "/search":
	case "/favicon.ico":
		if allow(w, r) {
			w.WriteHeader(http.StatusNoContent)
		}
		return
	default:
		render(w, http.StatusNotFound, "notfound.html", pageData{})
		return
	}
	if !allow(w, r) {
		return
	}
	q := r.URL.Query()
	d := pageData{Query: q.Get("q"), Type: "image"}
	if q.Get("type") == "audio" {
		d.Type = "audio"
	}
	if r.URL.Path == "/" {
		// The frontend's own first-party cookie, so tests can check
		// that the gateway passes the frontend's cookies through.
		http.SetCookie(w, &http.Cookie{Name: "ov_theme", Value: "light", Path: "/", SameSite: http.SameSiteLaxMode})
	}
	render(w, http.StatusOK, "page.html", d)
}

// allow answers 405 and reports false unless r is a GET or HEAD.
func allow(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
	return false
}

// render answers status with the template name executed with d, under a
// Content-Security-Policy naming a fresh nonce.
func render(w http.ResponseWriter, status int, name string, d pageData) {
	d.Nonce = rand.Text()
	var b bytes.Buffer
	if err := templates.ExecuteTemplate(&b, name, d); err != nil {
		http.Error(w, "500 internal server error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; style-src 'nonce-"+d.Nonce+"'; "+
		"img-src data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
