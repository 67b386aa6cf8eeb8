package respond_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/floodgate/floodgate/internal/respond"
)

// MaveDB's CSV rule: 100 requests per 5 minutes, 429 with Retry-After:
// 300, CORS headers, and a body pointing to the bulk archive.
func Example() {
	// At config load.
	w, err := respond.NewWriter(respond.Options{
		CORS: respond.CORS{AllowOrigins: []string{"*"}, ExposeHeaders: []string{"Retry-After"}},
	})
	if err != nil {
		panic(err)
	}
	msg, err := respond.CompileMessage(map[string]string{
		"en": "Too many CSV downloads ({limit}). Use the bulk archive at https://example.org/bulk instead.",
		"es": "Demasiadas descargas CSV ({limit}). Use el archivo completo en https://example.org/bulk.",
	})
	if err != nil {
		panic(err)
	}
	csv, err := respond.NewRule(respond.RuleSpec{
		Name:       "csv",
		Limit:      "100/5m",
		RetryAfter: 300 * time.Second,
		Message:    msg,
		Policies:   []respond.Policy{{Name: "csv", Quota: 100, Window: 5 * time.Minute}},
	})
	if err != nil {
		panic(err)
	}

	// In the handler, when the limiter refuses.
	r := httptest.NewRequest(http.MethodGet, "/scores", nil)
	r.Header.Set("Accept", "text/plain")
	r.Header.Set("Accept-Language", "es-MX,es;q=0.9")
	rec := httptest.NewRecorder()
	w.Write(rec, r, respond.Answer{Kind: respond.RateLimited, Rule: csv, RetryAfter: 17 * time.Second})

	for _, k := range []string{"Retry-After", "RateLimit-Policy", "RateLimit", "Access-Control-Allow-Origin", "Content-Language"} {
		fmt.Printf("%s: %s\n", k, rec.Header().Get(k))
	}
	fmt.Printf("\n%d\n%s", rec.Code, rec.Body)
	// Output:
	// Retry-After: 300
	// RateLimit-Policy: "csv";q=100;w=300
	// RateLimit: "csv";r=0;t=300
	// Access-Control-Allow-Origin: *
	// Content-Language: es
	//
	// 429
	// 429 Demasiadas solicitudes
	//
	// Demasiadas descargas CSV (100/5m). Use el archivo completo en https://example.org/bulk.
	// Vuelva a intentarlo dentro de 5 minutos.
}
