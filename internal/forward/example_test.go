package forward_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/floodgate/floodgate/internal/forward"
)

func Example() {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s for %s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Forwarded-For"))
	}))
	defer upstream.Close()
	target, _ := url.Parse(upstream.URL + "/v1/")

	f, err := forward.New(target, forward.Options{
		OnError: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, "bad gateway", http.StatusBadGateway)
		},
	})
	if err != nil {
		panic(err)
	}
	defer f.CloseIdle()
	gateway := httptest.NewServer(f)
	defer gateway.Close()

	resp, err := http.Get(gateway.URL + "/images?q=cat")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 GET /v1/images?q=cat for 127.0.0.1
}
