package admin_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/admin"
)

func TestExplainRequestHeaders(t *testing.T) {
	for _, tc := range []struct {
		body string
		want map[string][]string // nil: refused
		host string
	}{
		{`{"path":"/","headers":{"Accept":"*/*"}}`, map[string][]string{"Accept": {"*/*"}}, ""},
		// A repeated field, as a list; two spellings of one name add up.
		{`{"path":"/","headers":{"X-Api-Key":["a","b"]}}`, map[string][]string{"X-Api-Key": {"a", "b"}}, ""},
		{`{"path":"/","headers":{"X-Api-Key":"a","x-api-key":"b"}}`, map[string][]string{"X-Api-Key": {"a", "b"}}, ""},
		{`{"path":"/","headers":{"X-Empty":[]}}`, map[string][]string{}, ""},
		{`{"path":"/","headers":{"Host":"api.example"}}`, map[string][]string{}, "api.example"},
		{`{"path":"/","headers":{"host":["api.example"]}}`, map[string][]string{}, "api.example"},
		// Refused: a request has one Host; values are strings.
		{`{"path":"/","headers":{"Host":["a","b"]}}`, nil, ""},
		{`{"path":"/","headers":{"Host":"a","host":"b"}}`, nil, ""},
		{`{"path":"/","headers":{"Host":[]}}`, nil, ""},
		{`{"path":"/","headers":{"X-A":1}}`, nil, ""},
		{`{"path":"/","headers":{"X-A":["a",1]}}`, nil, ""},
		{`{"path":"/","headers":{"X-A":{"b":"c"}}}`, nil, ""},
		{`{"path":"/","headers":["X-A"]}`, nil, ""},
		{`{"path":"/","headers":{"X-A":null}}`, nil, ""},
		{`{"path":"/","headers":{"X-A":["a",null]}}`, nil, ""},
		{`{"path":"/","headers":null}`, map[string][]string{}, ""},
	} {
		var er admin.ExplainRequest
		err := json.Unmarshal([]byte(tc.body), &er)
		if err == nil {
			req, berr := er.Build()
			err = berr
			if err == nil {
				if tc.want == nil {
					t.Errorf("%s: accepted, want refused", tc.body)
					continue
				}
				got := map[string][]string(req.Header)
				if len(got) != len(tc.want) {
					t.Errorf("%s: header %v, want %v", tc.body, got, tc.want)
				}
				for k, v := range tc.want {
					if !slices.Equal(got[k], v) {
						t.Errorf("%s: %s = %q, want %q", tc.body, k, got[k], v)
					}
				}
				if want := tc.host; want != "" && req.Host != want {
					t.Errorf("%s: Host %q, want %q", tc.body, req.Host, want)
				}
				continue
			}
		}
		if tc.want != nil {
			t.Errorf("%s: refused (%v), want accepted", tc.body, err)
		}
	}
}

// FuzzExplainRequest: whatever the body, decoding and building never
// panic, and a built request keeps every value the body gave.
func FuzzExplainRequest(f *testing.F) {
	for _, s := range []string{
		`{"method":"GET","path":"/x","headers":{"User-Agent":"GPTBot/1.2"},"ip":"203.0.113.7"}`,
		`{"path":"/","headers":{"X-Api-Key":["a","b"],"x-api-key":"c"}}`,
		`{"path":"/?q=1","headers":{"Host":["h"]}}`,
		`{"headers":{"":[""]}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var er admin.ExplainRequest
		if json.Unmarshal([]byte(body), &er) != nil {
			return
		}
		req, err := er.Build()
		if err != nil {
			return
		}
		n := 0
		for k, vs := range er.Headers {
			if !strings.EqualFold(k, "Host") {
				n += len(vs)
			}
		}
		got := 0
		for _, vs := range req.Header {
			got += len(vs)
		}
		if got != n {
			t.Errorf("%q: %d header values built, want %d", body, got, n)
		}
	})
}
