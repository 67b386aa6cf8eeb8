// Package sample provides a tiny JSON upstream to try floodgate without a
// real API (`floodgate serve --sample-upstream`). It answers every request
// with what it received, so a person can see what floodgate forwarded.
package sample

import (
	"encoding/json"
	"net/http"
	"sort"
)

// Handler returns the sample upstream named name.
func Handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers := make([]string, 0, len(r.Header))
		for k := range r.Header {
			headers = append(headers, k)
		}
		sort.Strings(headers)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"upstream":     name,
			"method":       r.Method,
			"path":         r.URL.Path,
			"query":        r.URL.RawQuery,
			"header_names": headers,
		})
	})
}
