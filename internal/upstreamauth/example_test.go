package upstreamauth_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/floodgate/floodgate/internal/forward"
	"github.com/floodgate/floodgate/internal/upstreamauth"
)

func Example() {
	// A stand-in for the API upstream: a token endpoint and a search.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == upstreamauth.TokenPath {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"t0k","token_type":"Bearer","expires_in":36000}`)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: "csrftoken", Value: "x"})
		fmt.Fprintf(w, "auth=%q cookie=%q", r.Header.Get("Authorization"), r.Header.Get("Cookie"))
	}))
	defer api.Close()

	tokenURL, _ := upstreamauth.TokenURL(api.URL)
	src, err := upstreamauth.New(upstreamauth.Options{TokenURL: tokenURL, ClientID: "frontend", ClientSecret: "s3cret"})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: &forward.Transport{Credential: upstreamauth.Bearer(src)}}

	// A browser's request, forwarded: its credentials are replaced.
	req, _ := http.NewRequest("GET", api.URL+"/v1/images/?q=cat", nil)
	req.Header.Set("Cookie", "ovSession=abc")
	req.Header.Set("Authorization", "Bearer the-browsers")
	resp, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(string(body))
	fmt.Println(len(resp.Header.Values("Set-Cookie")))

	// Output:
	// auth="Bearer t0k" cookie=""
	// 0
}
