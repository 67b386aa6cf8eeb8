package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// base is the smallest file that validates; cases add what is wrong.
const base = `upstreams: {api: {url: "http://127.0.0.1:22081"}}` + "\n"

// writeConfig writes yaml to a file of its own and returns its name.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestValidateReportsEachProblemOnce: a mistake is one problem, at its
// field, in floodgate's words, on one line, however many stages (the
// validator, then compiling the answers, sessions, credentials) trip on
// it. F stands for the file's name.
func TestValidateReportsEachProblemOnce(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{
			name: "rule without a name",
			yaml: base + "rules: [{limits: [10/1m]}]\n",
			want: []string{`F:2: rules[0].name: a rule needs a name`},
		},
		{
			name: "two limits of one window",
			yaml: base + "rules: [{name: a, limits: [10/1m, 20/60s]}]\n",
			want: []string{`F:2: rules[0].limits[1]: limits[0] already has the window 1m: one limit per window`},
		},
		{
			name: "short session secret",
			yaml: base + "sessions: {secret: abcde}\n",
			want: []string{"F:2: sessions.secret: secret 1 (of the comma-separated list) is 5 bytes long; each must be at least 32 (make one with `openssl rand -base64 48`)"},
		},
		{
			name: "null origin",
			yaml: base + `responses: {cors: {allow_origin: "null"}}` + "\n",
			want: []string{`F:2: responses.cors.allow_origin: "null" is not "*" nor an origin such as https://example.org (scheme, host and optional port, no path)`},
		},
		{
			name: "client id without a secret",
			yaml: "upstreams:\n  api:\n    url: http://127.0.0.1:22081\n    auth: {type: client_credentials, client_id: abc}\n",
			want: []string{`F:4: upstreams.api.auth.client_secret: client_id is set but client_secret is empty: set both, or neither with optional: true`},
		},
		{
			name: "a header credential with a control character",
			yaml: "upstreams:\n  api:\n    url: http://127.0.0.1:22081\n    auth: {type: header, header_value: \"Bearer a\\x01b\"}\n",
			want: []string{`F:4: upstreams.api.auth.header_value: the value contains a control character (a line break, NUL, DEL, …), which no request can carry`},
		},
		{
			name: "a header credential in a field the forwarding sets or drops",
			yaml: "upstreams:\n  api:\n    url: http://127.0.0.1:22081\n    auth: {type: header, header_name: content-length, header_value: abc}\n",
			want: []string{`F:4: upstreams.api.auth.header_name: "content-length" is set or removed by the forwarding itself (framing, hop-by-hop or Host), so the credential would not reach the upstream; use a field such as Authorization or X-Api-Key`},
		},
		{
			name: "a message's texts with several mistakes",
			yaml: base + "rules: [{name: a, limits: [10/1m], message: {en: '{foo} or {bar}', es: '}'}}]\n",
			want: []string{
				`F:2: rules[0].message.en: unknown placeholder {foo} at byte 0 (allowed: {rule}, {limit}, {retry_after}, {retry_after_human})`,
				`F:2: rules[0].message.en: unknown placeholder {bar} at byte 9 (allowed: {rule}, {limit}, {retry_after}, {retry_after_human})`,
				`F:2: rules[0].message.es: unmatched '}' at byte 0 (write }} for a literal brace)`,
			},
		},
		{
			name: "a message tag that is not one",
			yaml: base + "rules: [{name: a, limits: [10/1m], message: {'e n': x}}]\n",
			want: []string{`F:2: rules[0].message["e n"]: "e n" is not a language tag such as en, es or pt-BR`},
		},
		{
			name: "a message naming limits a rule lacks",
			yaml: base + "rules:\n  - {name: a, max_inflight: 2, message: 'over {limit}'}\n  - {name: b, action: deny, message: {en: 'over {limit}'}}\n",
			want: []string{
				`F:3: rules[0].message: message uses {limit} but the rule has no limit`,
				`F:4: rules[1].message: message uses {limit} but the rule has no limit`,
			},
		},
		{
			name: "a message naming a limit that is wrong",
			yaml: base + "rules: [{name: a, limits: [10/0s], message: 'over {limit}'}]\n",
			want: []string{`F:2: rules[0].limits[0]: limit "10/0s": window "0s" is not a positive duration (such as 1s, 5m, 1h, 1d)`},
		},
		{
			name: "a nameless rule's message naming it",
			yaml: base + "rules: [{limits: [10/1m], message: 'slow down, {rule}'}]\n",
			want: []string{`F:2: rules[0].name: a rule needs a name`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, tc.yaml, tc.want)
		})
	}
}

// TestValidateTrustedProxies: an entry client_ip.trusted_proxies cannot
// take is reported at the entry, indexed from 0, next to every other
// problem of the file.
func TestValidateTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{
			name: "host bits set, and another mistake",
			yaml: base + "client_ip: {trusted_proxies: [10.0.0.1/8]}\nmode: bad\n",
			want: []string{
				`F:2: client_ip.trusted_proxies[0]: "10.0.0.1/8": host bits set: did you mean 10.0.0.0/8, or 10.0.0.1/32 for one host?`,
				`F:3: mode: unknown mode "bad" (allowed: enforce, log-only)`,
			},
		},
		{
			name: "the second entry",
			yaml: base + "client_ip:\n  trusted_proxies:\n    - 10.0.0.0/8\n    - 2001:db8::1/32\n",
			want: []string{`F:5: client_ip.trusted_proxies[1]: "2001:db8::1/32": host bits set: did you mean 2001:db8::/32, or 2001:db8::1/128 for one host?`},
		},
		{
			name: "one comma-separated string",
			yaml: base + "client_ip: {trusted_proxies: '192.0.2.0/24, 192.0.2.9/24'}\n",
			want: []string{`F:2: client_ip.trusted_proxies[1]: "192.0.2.9/24": host bits set: did you mean 192.0.2.0/24, or 192.0.2.9/32 for one host?`},
		},
		{
			name: "and trusted hops as well",
			yaml: base + "client_ip: {trusted_proxies: [10.0.0.1/8], trusted_hops: 1}\n",
			want: []string{
				`F:2: client_ip.trusted_hops: cannot be used together with trusted_proxies: trust proxies by address or by count, not both`,
				`F:2: client_ip.trusted_proxies[0]: "10.0.0.1/8": host bits set: did you mean 10.0.0.0/8, or 10.0.0.1/32 for one host?`,
			},
		},
		{
			name: "not an address, reported once",
			yaml: base + "client_ip: {trusted_proxies: [nonsense]}\n",
			want: []string{`F:2: client_ip.trusted_proxies[0]: "nonsense" is not an IP address or CIDR prefix`},
		},
		{
			name: "a zone, reported once",
			yaml: base + "client_ip: {trusted_proxies: ['fe80::1%eth0']}\n",
			want: []string{`F:2: client_ip.trusted_proxies[0]: "fe80::1%eth0": an address with a zone cannot be trusted`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkProblems(t, tc.yaml, tc.want)
		})
	}
}

// checkProblems runs validate on yaml and compares what it prints with
// want, the problems (F standing for the file's name) and their count.
func checkProblems(t *testing.T, yaml string, want []string) {
	t.Helper()
	file := writeConfig(t, yaml)
	code, _, stderr := run(t, nil, "validate", "--config", file)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	got := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	want = append([]string(nil), want...)
	for i, w := range want {
		want[i] = strings.Replace(w, "F:", file+":", 1)
	}
	want = append(want, fmt.Sprintf("%s: %d problem%s", file, len(want), plural(len(want))))
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("validate's stderr (-got +want):\n%s", diff)
	}
}

// TestValidateCORS: expose_headers means something only with
// allow_origin, as a setting that would be ignored is a problem.
func TestValidateCORS(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // nil: the file is valid
	}{
		{
			name: "expose_headers alone",
			yaml: base + "responses: {cors: {expose_headers: [X-A]}}\n",
			want: []string{`F:2: responses.cors.expose_headers: expose_headers needs allow_origin: without it answers carry no CORS fields and expose nothing; set allow_origin, or remove expose_headers`},
		},
		{
			name: "expose_headers alone, with another mistake",
			yaml: base + "responses: {cors: {expose_headers: [Retry-After]}, ratelimit_headers: sometimes}\n",
			want: []string{
				`F:2: responses.cors.expose_headers: expose_headers needs allow_origin: without it answers carry no CORS fields and expose nothing; set allow_origin, or remove expose_headers`,
				`F:2: responses.ratelimit_headers: unknown ratelimit_headers value "sometimes" (allowed: always, limited, never)`,
			},
		},
		{name: "with allow_origin", yaml: base + "responses: {cors: {allow_origin: '*', expose_headers: [X-A]}}\n"},
		{name: "an empty list", yaml: base + "responses: {cors: {expose_headers: []}}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == nil {
				if code, _, stderr := run(t, nil, "validate", "--config", writeConfig(t, tc.yaml)); code != 0 {
					t.Errorf("exit %d, want 0:\n%s", code, stderr)
				}
				return
			}
			checkProblems(t, tc.yaml, tc.want)
		})
	}
}
