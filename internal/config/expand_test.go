package config

import (
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	env := map[string]string{
		"HOST":      "example.org",
		"EMPTY":     "",
		"COLON":     "a: b",
		"NEWLINES":  "line1\nline2\n- item",
		"REF":       "${HOST}",
		"DOLLARS":   "$$",
		"OPEN":      "${",
		"LONG":      long,
		"_UNDER_9":  "u",
		"YAML_FLOW": "[a, {b: c}]",
	}
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "no reference", in: "plain text", want: "plain text"},
		{name: "empty", in: "", want: ""},
		{name: "variable", in: "http://${HOST}:8080/", want: "http://example.org:8080/"},
		{name: "two variables", in: "${HOST}${HOST}", want: "example.orgexample.org"},
		{name: "underscore and digits", in: "${_UNDER_9}", want: "u"},
		{name: "default unused", in: "${HOST:-other}", want: "example.org"},
		{name: "default when unset", in: "${NOPE:-127.0.0.1:8080}", want: "127.0.0.1:8080"},
		{name: "default when empty", in: "${EMPTY:-fallback}", want: "fallback"},
		{name: "empty default", in: "${NOPE:-}", want: ""},
		{name: "set and empty", in: "[${EMPTY}]", want: "[]"},
		{name: "default with colon-dash", in: "${NOPE:-a:-b}", want: "a:-b"},
		{name: "default with dollar", in: "${NOPE:-$5}", want: "$5"},
		{name: "escaped dollar", in: "$${HOST}", want: "${HOST}"},
		{name: "two escaped", in: "$$$$", want: "$$"},
		{name: "lone dollar kept", in: "a$ b$c $", want: "a$ b$c $"},
		{name: "regexp end anchor", in: "request.path.matches('/scores/?$')", want: "request.path.matches('/scores/?$')"},
		{name: "value with colon space", in: "${COLON}", want: "a: b"},
		{name: "value with newlines", in: "${NEWLINES}", want: "line1\nline2\n- item"},
		{name: "value with flow syntax", in: "${YAML_FLOW}", want: "[a, {b: c}]"},
		{name: "value not expanded again", in: "${REF}", want: "${HOST}"},
		{name: "dollars in value kept", in: "${DOLLARS}", want: "$$"},
		{name: "open reference in value", in: "${OPEN}x}", want: "${x}"},
		{name: "long value", in: "<${LONG}>", want: "<" + long + ">"},
		{
			name:    "unset",
			in:      "${NOPE}",
			want:    "",
			wantErr: `environment variable NOPE is not set, and "${NOPE}" has no default`,
		},
		{
			name:    "unset twice",
			in:      "${A}/${B}",
			want:    "/",
			wantErr: "environment variable A is not set, and \"${A}\" has no default\nenvironment variable B is not set, and \"${B}\" has no default",
		},
		{name: "unterminated", in: "x ${HOST", want: "x ${HOST", wantErr: `unterminated variable reference "${HOST" (missing "}")`},
		{name: "bare open", in: "${", want: "${", wantErr: `unterminated variable reference "${" (missing "}")`},
		{name: "empty reference", in: "${}", want: "${}", wantErr: `empty variable reference "${}"`},
		{name: "digit first", in: "${1X}", want: "${1X}", wantErr: `malformed variable reference "${1X}": a name starts with a letter or _`},
		{name: "dash", in: "${A-B}", want: "${A-B}", wantErr: `malformed variable reference "${A-B}": expected "}" or ":-" after A`},
		{name: "question", in: "${A:?required}", want: "${A:?required}", wantErr: `malformed variable reference "${A:?required}": expected "}" or ":-" after A`},
		{name: "space", in: "${ A}", want: "${ A}", wantErr: `malformed variable reference "${ A}": a name starts with a letter or _`},
		{name: "nested default", in: "${A:-${B}}", want: "${A:-${B}}", wantErr: `nested variable reference "${A:-${B}": a default is literal text`},
		{
			name:    "long reference shortened",
			in:      "${" + strings.Repeat("A", 100) + "-}",
			want:    "${" + strings.Repeat("A", 100) + "-}",
			wantErr: `malformed variable reference "${` + strings.Repeat("A", 62) + `…": expected "}" or ":-" after ` + strings.Repeat("A", 100),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.in, lookupIn(env))
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Errorf("Expand(%.40q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("Expand(%.40q) = %.60q, want %.60q", tt.in, got, tt.want)
			}
		})
	}
}

// TestExpandNilLookup: nil means no variable is set.
func TestExpandNilLookup(t *testing.T) {
	got, err := Expand("${A:-a}${B}", nil)
	if got != "a" || err == nil {
		t.Errorf(`Expand("${A:-a}${B}", nil) = %q, %v; want "a" and an error`, got, err)
	}
}

// TestExpandNeverLeaksValues: problems name variables, never values.
func TestExpandNeverLeaksValues(t *testing.T) {
	env := map[string]string{"SECRET": "hunter2"}
	_, err := Expand("${SECRET}${MISSING}${SECRET:-x}${1}", lookupIn(env))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Expand error = %v, want problems without the secret's value", err)
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{
		"", "plain", "${A}", "${A:-b}", "$$", "$${A}", "${", "${}", "${1X}", "${A-B}",
		"${A:-${B}}", "a$", "${EMPTY:-x}", "${LOOP}", "$${$}{}", "${A}${B:-}${C:-c}",
	} {
		f.Add(s)
	}
	env := map[string]string{"A": "a", "EMPTY": "", "LOOP": "${LOOP}", "DOLLAR": "$"}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Expand(s, lookupIn(env))
		if !strings.Contains(s, "$") && (got != s || err != nil) {
			t.Fatalf("Expand(%q) = %q, %v; want the input unchanged", s, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			for line := range strings.SplitSeq(err.Error(), "\n") {
				if line == "" {
					t.Fatalf("Expand(%q) error has an empty line: %q", s, err)
				}
			}
		}
		// Every byte of the output comes from s or from a value: with
		// values that contain no "$", output "$"s are at most the input's.
		if strings.Count(got, "$") > strings.Count(s, "$")+strings.Count(s, "${LOOP}")*2 {
			t.Fatalf("Expand(%q) = %q: more $ than the input and values hold", s, got)
		}
	})
}

func TestMissingVariables(t *testing.T) {
	data := []byte("listen: ${A}\nadmin: {listen: \"${B:-127.0.0.1:9}\", token: \"${C}${A}\"}\nmode: ${D}\n")
	f, _ := Parse("m.yaml", data, "", func(k string) (string, bool) { return "enforce", k == "D" })
	if got := f.MissingVariables(); !slices.Equal(got, []string{"A", "C"}) {
		t.Errorf("MissingVariables() = %q, want [A C]: unset without a default, once each, in order", got)
	}
	for name, want := range map[string][]string{"A": {"listen", "admin.token"}, "C": {"admin.token"}, "B": nil, "D": nil} {
		if got := f.MissingVariableFields(name); !slices.Equal(got, want) {
			t.Errorf("MissingVariableFields(%q) = %q, want %q", name, got, want)
		}
	}
	f, _ = Parse("m.yaml", []byte("mode: enforce\n"), "", nil)
	if got := f.MissingVariables(); len(got) != 0 {
		t.Errorf("a file without variables: %q", got)
	}
}
