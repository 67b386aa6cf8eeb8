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
			name: "a nameless rule's message naming it",
			yaml: base + "rules: [{limits: [10/1m], message: 'slow down, {rule}'}]\n",
			want: []string{`F:2: rules[0].name: a rule needs a name`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, tc.yaml)
			code, _, stderr := run(t, nil, "validate", "--config", file)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			got := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			want := append([]string(nil), tc.want...)
			for i, w := range want {
				want[i] = strings.Replace(w, "F:", file+":", 1)
			}
			want = append(want, fmt.Sprintf("%s: %d problem%s", file, len(want), plural(len(want))))
			if diff := cmp.Diff(got, want); diff != "" {
				t.Errorf("validate's stderr (-got +want):\n%s", diff)
			}
		})
	}
}
