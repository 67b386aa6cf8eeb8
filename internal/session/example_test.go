package session_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/floodgate/floodgate/internal/session"
)

func Example() {
	m, err := session.New(session.Options{
		Secrets: session.SplitSecrets("a-new-secret-of-at-least-32-bytes!,an-old-secret-of-at-least-32-bytes!!"),
		MaxAge:  time.Hour,
	})
	if err != nil {
		panic(err)
	}
	// First page load: no cookie, so issue one.
	w := httptest.NewRecorder()
	id, _ := m.Issue(w)
	c := w.Result().Cookies()[0]
	fmt.Println(c.Name, c.HttpOnly, c.Secure, c.SameSite == http.SameSiteLaxMode, c.MaxAge)

	// Next request: the browser sends it back.
	r := httptest.NewRequest("GET", "/api/search/image?q=cat", nil)
	r.Header.Set("Cookie", "theme=dark; "+c.Name+"="+c.Value)
	got, present, valid := m.Verify(r)
	fmt.Println(got == id, present, valid)

	// Forwarded to the frontend upstream without the session cookie.
	m.StripCookie(r.Header)
	fmt.Println(r.Header.Get("Cookie"))

	// A forged cookie is present but not valid.
	r.Header.Set("Cookie", "ovSession=made-up")
	fmt.Println(m.Verify(r))
	// Output:
	// ovSession true true true 3600
	// true true true
	// theme=dark
	//  true false
}
