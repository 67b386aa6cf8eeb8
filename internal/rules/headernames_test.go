package rules_test

import (
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/rules"
)

// TestHeaderNamesLowerCase: the header maps hold lower-case names, so a
// condition, count_when or key that names a header with an upper-case
// letter could never find it — the rule would be skipped on every request
// (an index of a missing key) or its test always false — and validate
// says so at the name, with the spelling that works. Names in lower case,
// query parameters (whose names keep their case) and names that are not
// constants are left alone.
func TestHeaderNamesLowerCase(t *testing.T) {
	for _, tc := range []struct {
		field, expr string
		want        string // "" for no problem
	}{
		{"when", `request.headers['X-Api-Key'] == 'k'`, `at 1:17: request.headers holds header names in lower case, so "X-Api-Key" is never in it: write "x-api-key"`},
		{"when", `'X-Api-Key' in request.headers`, `at 1:1: request.headers holds header names in lower case, so "X-Api-Key" is never in it: write "x-api-key"`},
		{"when", `!('Authorization' in request.headers)`, `"Authorization" is never in it: write "authorization"`},
		{"when", `request.headers[?'X-Api-Key'].orValue('') != ''`, `"X-Api-Key" is never in it: write "x-api-key"`},
		{"when", `has(request.headers.Authorization)`, `"Authorization" is never in it: write "authorization"`},
		{"when", `request.path == '/x' && request.headers['x-ok'] == 'A' || request.headers['User-Agent'] == 'b'`, `"User-Agent" is never in it: write "user-agent"`},
		{"count_when", `response.headers['Retry-After'] == '1'`, `response.headers holds header names in lower case, so "Retry-After" is never in it: write "retry-after"`},
		{"key", `expr:request.headers['X-Tenant']`, `"X-Tenant" is never in it: write "x-tenant"`},
		{"when", `request.headers['x-api-key'] == 'K'`, ""},
		{"when", `'x-api-key' in request.headers`, ""},
		{"when", `request.headers[?'authorization'].orValue('') != ''`, ""},
		{"when", `request.query['Page'] == '1' && 'Sort' in request.query`, ""},
		{"when", `request.headers[request.method] == 'GET'`, ""},
		{"when", `'X-Api-Key' in ['X-Api-Key']`, ""},
		{"count_when", `response.status == 401 && 'retry-after' in response.headers`, ""},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			rule := `{name: r, limits: [1/1m], when: "` + tc.expr + `"}`
			switch tc.field {
			case "count_when":
				rule = `{name: r, limits: [1/1m], count_when: "` + tc.expr + `"}`
			case "key":
				rule = `{name: r, limits: [1/1m], key: ["` + tc.expr + `"]}`
			}
			f, err := config.Parse("t.yaml", []byte("upstreams: {api: {url: 'http://127.0.0.1:1'}}\nrules:\n  - "+rule+"\n"),
				"", func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			f.Config.ApplyDefaults()
			_, ps := rules.Compile(f)
			got := ps.Error()
			if tc.want == "" {
				if got != "" {
					t.Errorf("Compile: %s, want no problem", got)
				}
				return
			}
			if !strings.HasPrefix(got, "t.yaml:3: rules[0].") || !strings.Contains(got, "CEL: ") || !strings.Contains(got, tc.want) {
				t.Errorf("Compile: %q, want a problem at t.yaml:3 containing %q", got, tc.want)
			}
		})
	}
}
