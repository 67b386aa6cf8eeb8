package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const lineDoc = `mode: enforce
upstreams:
  api:
    url: http://127.0.0.1:8081
  "a.b":
    url: http://127.0.0.1:8082
client_ip:
  trusted_proxies: 10.0.0.0/8, 10.1.0.0/16
rules:
  - name: first
    limits: [100/5m]
  - name: second
    limits:
      - 10/1s
      - 60/1m
    message:
      en: Slow down.
      pt-BR: Mais devagar.
`

func TestLine(t *testing.T) {
	f, err := Parse("lines.yaml", []byte(lineDoc), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path     string
		line     int
		column   int
		fallback bool // not in the file itself
	}{
		{path: "mode", line: 1, column: 1},
		{path: "upstreams", line: 2, column: 1},
		{path: "upstreams.api", line: 3, column: 3},
		{path: "upstreams.api.url", line: 4, column: 5},
		{path: `upstreams["a.b"].url`, line: 6, column: 5},
		{path: "client_ip.trusted_proxies", line: 8, column: 3},
		{path: "client_ip.trusted_proxies[1]", line: 8, column: 3, fallback: true},
		{path: "rules[0]", line: 10, column: 5},
		{path: "rules[0].limits[0]", line: 11, column: 14},
		{path: "rules[1].limits", line: 13, column: 5},
		{path: "rules[1].limits[1]", line: 15, column: 9},
		{path: "rules[1].message.pt-BR", line: 18, column: 7},
		{path: "rules[1].key", line: 12, column: 5, fallback: true},
		{path: "rules[1].key[0]", line: 12, column: 5, fallback: true},
		{path: "rules[7].when", line: 9, column: 1, fallback: true},
		{path: "log.level", line: 0, column: 0, fallback: true},
		{path: "", line: 0, column: 0, fallback: true},
	}
	for _, tt := range tests {
		if got := f.Line(tt.path); got != tt.line {
			t.Errorf("Line(%q) = %d, want %d", tt.path, got, tt.line)
		}
		if got, want := f.Position(tt.path), (Position{tt.line, tt.column}); got != want {
			t.Errorf("Position(%q) = %+v, want %+v", tt.path, got, want)
		}
		if got := f.Has(tt.path); got == tt.fallback {
			t.Errorf("Has(%q) = %v, want %v", tt.path, got, !tt.fallback)
		}
	}
	var nilFile *File
	if got := nilFile.Line("mode"); got != 0 {
		t.Errorf("(*File)(nil).Line = %d, want 0", got)
	}
}

func TestParentPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "mode", want: ""},
		{in: "", want: ""},
		{in: "admin.listen", want: "admin"},
		{in: "rules[2]", want: "rules"},
		{in: "rules[2].limits[0]", want: "rules[2].limits"},
		{in: `upstreams["a.b"]`, want: "upstreams"},
		{in: `upstreams["a.b[1]"].url`, want: `upstreams["a.b[1]"]`},
		{in: `upstreams["q\"[x"].url`, want: `upstreams["q\"[x"]`},
	}
	for _, tt := range tests {
		if got := parentPath(tt.in); got != tt.want {
			t.Errorf("parentPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestJoinKey(t *testing.T) {
	tests := []struct{ path, key, want string }{
		{path: "", key: "mode", want: "mode"},
		{path: "upstreams", key: "api", want: "upstreams.api"},
		{path: "upstreams", key: "a.b", want: `upstreams["a.b"]`},
		{path: "rules[0].message", key: "pt-BR", want: "rules[0].message.pt-BR"},
		{path: "rules[0].message", key: "", want: `rules[0].message[""]`},
		{path: "", key: "x y", want: `["x y"]`},
	}
	for _, tt := range tests {
		if got := joinKey(tt.path, tt.key); got != tt.want {
			t.Errorf("joinKey(%q, %q) = %q, want %q", tt.path, tt.key, got, tt.want)
		}
	}
}

// TestDecode checks the special forms: StringList, Message, and scalars
// whose type is resolved again after expansion.
func TestDecode(t *testing.T) {
	env := map[string]string{
		"PROXIES":  " 10.0.0.0/8 ,, 192.168.0.1, ",
		"MAX_KEYS": "4096",
		"HOPS":     "0x2",
		"HOSTILE":  "a: b\n- c: [d]\n${MAX_KEYS}",
		"NULL":     "null",
	}
	tests := []struct {
		name string
		yaml string
		want func(*Config)
	}{
		{
			name: "list as a sequence",
			yaml: "client_ip: {trusted_proxies: [10.0.0.0/8, 192.168.0.1]}",
			want: func(c *Config) { c.ClientIP.TrustedProxies = StringList{"10.0.0.0/8", "192.168.0.1"} },
		},
		{
			name: "list as one comma-separated string",
			yaml: "client_ip:\n  trusted_proxies: ${PROXIES}",
			want: func(c *Config) { c.ClientIP.TrustedProxies = StringList{"10.0.0.0/8", "192.168.0.1"} },
		},
		{
			name: "list from an unset variable with an empty default",
			yaml: "client_ip:\n  trusted_proxies: ${UNSET:-}",
			want: func(c *Config) {},
		},
		{
			name: "list from one address",
			yaml: "client_ip: {trusted_proxies: 10.0.0.1}",
			want: func(c *Config) { c.ClientIP.TrustedProxies = StringList{"10.0.0.1"} },
		},
		{
			name: "list with a variable item",
			yaml: "client_ip: {trusted_proxies: [\"${MAX_KEYS}\", x]}",
			want: func(c *Config) { c.ClientIP.TrustedProxies = StringList{"4096", "x"} },
		},
		{
			name: "message as one string",
			yaml: "rules: [{name: a, message: Slow down.}]",
			want: func(c *Config) { c.Rules = []Rule{{Name: "a", Message: Message{"": "Slow down."}}} },
		},
		{
			name: "message per language",
			yaml: "rules: [{name: a, message: {en: Slow down., es: Más despacio., pt-BR: '${MAX_KEYS}'}}]",
			want: func(c *Config) {
				c.Rules = []Rule{{Name: "a", Message: Message{"en": "Slow down.", "es": "Más despacio.", "pt-BR": "4096"}}}
			},
		},
		{
			name: "integer from a variable",
			yaml: "store:\n  max_keys: ${MAX_KEYS}",
			want: func(c *Config) { c.Store.MaxKeys = 4096 },
		},
		{
			name: "integer from a quoted variable",
			yaml: `store: {max_keys: "${MAX_KEYS}"}`,
			want: func(c *Config) { c.Store.MaxKeys = 4096 },
		},
		{
			name: "integer from a default",
			yaml: "client_ip:\n  trusted_hops: \"${UNSET:-3}\"\n  ipv4_prefix: ${HOPS}",
			want: func(c *Config) { c.ClientIP.TrustedHops, c.ClientIP.IPv4Prefix = 3, 2 },
		},
		{
			name: "integer from an empty variable is unset",
			yaml: `client_ip: {ipv4_prefix: "${UNSET:-}"}`,
			want: func(c *Config) {},
		},
		{
			name: "integer into a string",
			yaml: "listen: 8080",
			want: func(c *Config) { c.Listen = "8080" },
		},
		{
			name: "hostile value stays one string",
			yaml: "listen: ${HOSTILE}",
			want: func(c *Config) { c.Listen = "a: b\n- c: [d]\n${MAX_KEYS}" },
		},
		{
			name: "a variable holding null is the string null",
			yaml: "mode: ${NULL}",
			want: func(c *Config) { c.Mode = "null" },
		},
		{
			name: "keys are not expanded",
			yaml: "upstreams:\n  ${MAX_KEYS}: {url: x}",
			want: func(c *Config) { c.Upstreams = map[string]Upstream{"${MAX_KEYS}": {URL: "x"}} },
		},
		{
			name: "null leaves a field unset",
			yaml: "mode:\nlisten: ~\nadmin:\nrules:",
			want: func(c *Config) {},
		},
		{
			name: "x- keys hold anchors",
			yaml: "x-common: &c {key: [ip], limits: [1/s]}\nrules: [{<<: *c, name: a}, {<<: *c, name: b, limits: [2/s]}]",
			want: func(c *Config) {
				c.Rules = []Rule{
					{Name: "a", Key: []string{"ip"}, Limits: []string{"1/s"}},
					{Name: "b", Key: []string{"ip"}, Limits: []string{"2/s"}},
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(tt.yaml), "", lookupIn(env))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.yaml, err)
			}
			var want Config
			tt.want(&want)
			if diff := cmp.Diff(f.Config, want); diff != "" {
				t.Errorf("Parse(%q).Config (-got +want):\n%s", tt.yaml, diff)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	f, err := Load("testdata/valid/minimal.yaml", "", nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if f.Name != "testdata/valid/minimal.yaml" || f.Config.Upstreams["api"].URL != "http://127.0.0.1:8081" {
		t.Errorf("Load = %+v, want minimal.yaml's upstream", f)
	}

	_, err = Load("testdata/no-such-file.yaml", "", nil)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing file) error = %v, want fs.ErrNotExist", err)
	}
}

// TestFileTooLarge: the size cap holds for Load and Parse, and a file
// just under it is read.
func TestFileTooLarge(t *testing.T) {
	var b strings.Builder
	b.WriteString("upstreams: {api: {url: http://127.0.0.1:8081}}\n")
	for b.Len() < MaxFileSize {
		b.WriteString("# padding padding padding padding padding padding padding padding\n")
	}
	big := b.String()[:MaxFileSize+1]
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "big.yaml: file is larger than 4 MiB"
	f, err := Load(path, "", nil)
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("Load(%d bytes) error = %v, want %q", len(big), err, want)
	}
	if f == nil || len(f.Validate()) != 0 {
		t.Errorf("Load(%d bytes): want a File whose Validate adds nothing", len(big))
	}

	ok := big[:strings.LastIndexByte(big[:MaxFileSize], '\n')+1]
	if _, err := Parse("ok.yaml", []byte(ok), "", nil); err != nil {
		t.Errorf("Parse(%d bytes) error = %v, want none", len(ok), err)
	}
}

// TestAliasBomb: a "billion laughs" document is refused quickly, with
// its aliases expanded no further than the budget.
func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("x-lol:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 20; i++ {
		b.WriteString("  l" + itoa(i) + ": &l" + itoa(i) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("upstreams: {api: {url: http://127.0.0.1:8081}}\n")
	doc := []byte(b.String())

	allocs := testing.AllocsPerRun(1, func() {
		_, err := Parse("bomb.yaml", doc, "", nil)
		if err == nil || !strings.Contains(err.Error(), "aliases expand to more than 10000 nodes") {
			t.Errorf("Parse(bomb) error = %v, want the alias budget exceeded", err)
		}
	})
	if allocs > 200000 {
		t.Errorf("Parse(bomb) allocs = %v, want the budget to bound them", allocs)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestSelfAlias: an alias inside the node it names does not loop.
func TestSelfAlias(t *testing.T) {
	for _, doc := range []string{
		"x-a: &a [*a]\nupstreams: {api: {url: http://127.0.0.1:8081}}",
		"x-a: &a {b: *a}\nupstreams: {api: {url: http://127.0.0.1:8081}}",
	} {
		_, err := Parse("self.yaml", []byte(doc), "", nil)
		if err == nil {
			t.Errorf("Parse(%q) = no error, want a problem", doc)
		}
	}
}

// TestProblemsHaveFields: every problem of a decoded file names a field,
// except those of the file as a whole.
func TestProblemsComeWithTheFile(t *testing.T) {
	_, err := Parse("x.yaml", []byte("mode: [a]\nbogus: 1\n"), "", nil)
	var ps Problems
	if !errors.As(err, &ps) || len(ps) != 2 {
		t.Fatalf("Parse error = %v, want 2 Problems", err)
	}
	for _, p := range ps {
		if p.File != "x.yaml" || p.Line == 0 || p.Field == "" {
			t.Errorf("problem %+v: want file, line and field", p)
		}
	}
}

// TestDuplicateKeysInOwnMappings: a message's languages and a route
// parameter's values are mappings too, where a key written twice is a
// problem at its second line, not the last one silently winning.
func TestDuplicateKeysInOwnMappings(t *testing.T) {
	const upstream = "\nupstreams: {api: {url: 'http://127.0.0.1:8081'}}"
	tests := []struct {
		name string
		doc  string
		env  string
		want string // "" for no problem
	}{
		{name: "message language", doc: "rules: [{name: d, action: deny, message: {en: FIRST, en: SECOND}}]",
			want: `t.yaml:1: rules[0].message.en: duplicate key "en" (the first is at line 1)`},
		{name: "message language quoted", doc: "rules:\n  - name: d\n    action: deny\n    message:\n      en: FIRST\n      \"en\": SECOND",
			want: `t.yaml:6: rules[0].message.en: duplicate key "en" (the first is at line 5)`},
		{name: "message language three times", doc: "rules:\n  - name: d\n    action: deny\n    message:\n      en: A\n      en: B\n      en: C",
			want: "t.yaml:6: rules[0].message.en: duplicate key \"en\" (the first is at line 5)\nt.yaml:7: rules[0].message.en: duplicate key \"en\" (the first is at line 5)"},
		{name: "parameter value", doc: "routes: [{name: r, path: '/{t}', upstream: api, params: {t: {image: images, image: audio}}}]",
			want: `t.yaml:1: routes[0].params.t.image: duplicate key "image" (the first is at line 1)`},
		{name: "message in an environment", env: "production",
			doc:  "rules: [{name: d, action: deny, message: x}]\nenvironments:\n  production:\n    rules:\n      - name: d\n        message: {es: uno, es: dos}",
			want: `t.yaml:6: environments.production.rules[0].message.es: duplicate key "es" (the first is at line 6)`},
		{name: "message in an environment not applied",
			doc:  "rules: [{name: d, action: deny, message: x}]\nenvironments:\n  production:\n    rules:\n      - name: d\n        message: {es: uno, es: dos}",
			want: `t.yaml:6: environments.production.rules[0].message.es: duplicate key "es" (the first is at line 6)`},

		// A block pasted from another file (decide.md's client_ip and
		// decide) into one that has its own client_ip.
		{name: "top-level section twice", doc: "client_ip:\n  trusted_proxies: [10.0.0.5]\nmode: enforce\nclient_ip:\n  trusted_proxies: [127.0.0.1]",
			want: `t.yaml:4: client_ip: duplicate key "client_ip" (the first is at line 1)`},
		{name: "environments twice", doc: "environments: {a: {mode: enforce}}\nenvironments: {b: {mode: enforce}}",
			want: `t.yaml:2: environments: duplicate key "environments" (the first is at line 1)`},

		{name: "languages differing in case", doc: "rules: [{name: d, action: deny, message: {pt-BR: a, pt-br: b}}]"},
		{name: "a value twice under two keys", doc: "routes: [{name: r, path: '/{t}', upstream: api, params: {t: {image: x, audio: x}}}]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("t.yaml", []byte(tt.doc+upstream), tt.env, nil)
			got := ""
			if err != nil {
				got = err.Error()
			} else if probs := f.Validate(); len(probs) > 0 {
				got = probs.Error()
			}
			if got != tt.want {
				t.Errorf("Parse and Validate of\n%s\n=\n%s\nwant\n%s", tt.doc, got, tt.want)
			}
		})
	}
}

// syntaxHead is the first five lines of the syntaxLineTests documents.
const syntaxHead = "upstreams:\n  api:\n    url: http://127.0.0.1:8081\nrules:\n  - name: a\n"

// syntaxLineTests are YAML syntax errors and the line and text of their
// problem; FuzzParse starts from them too.
var syntaxLineTests = []struct {
	name string
	doc  string
	line int
	msg  string // the problem's text after "YAML syntax: "
}{
	{name: "tab on line 6", doc: syntaxHead + "  \tlimits: [1/1m]\n", line: 6,
		msg: "found a tab character that violates indentation: indent with spaces, not tabs"},
	{name: "tab on line 7", doc: syntaxHead + "    action: block\n  \tlimits: [1/1m]\n", line: 7,
		msg: "found a tab character that violates indentation: indent with spaces, not tabs"},
	{name: "tab on line 8", doc: syntaxHead + "    action: block\n    algorithm: gcra\n \t limits: [1/1m]\n", line: 8,
		msg: "found a tab character that violates indentation: indent with spaces, not tabs"},
	{name: "tab after a scalar of two lines", doc: syntaxHead + "    when: request.path\n      == '/x'\n  \tlimits: [1/1m]\n", line: 8,
		msg: "found a tab character that violates indentation: indent with spaces, not tabs"},
	{name: "tab on line 2", doc: "mode: enforce\n\tlisten: :8080\n", line: 2,
		msg: "found a tab character that violates indentation: indent with spaces, not tabs"},
	{name: "tab with CRLF line ends", doc: strings.ReplaceAll(syntaxHead+"    action: block\n  \tlimits: [1/1m]\n", "\n", "\r\n"), line: 7,
		msg: "found a tab character that violates indentation: indent with spaces, not tabs"},
	{name: "tab at the start of line 1", doc: "\tmode: enforce\n", line: 1,
		msg: "found character that cannot start any token: indent with spaces, not tabs"},
	{name: "tab at the start of a block", doc: "upstreams:\n\tapi: {url: http://127.0.0.1:8081}\n", line: 2,
		msg: "found character that cannot start any token: indent with spaces, not tabs"},
	{name: "list item indented too little", doc: syntaxHead + "    limits: [1/1m]\n   key: [ip]\n", line: 7,
		msg: "did not find expected '-' indicator: this line is indented unlike the list's items, or is not an item (- …) of the list that starts at line 5"},
	{name: "a key beside a list's items", doc: "upstreams:\n  api: {url: http://127.0.0.1:8081}\nrules:\n  - name: a\n    limits: [1/m]\n  - name: b\n    limits: [1/m]\n  key: [ip]\n", line: 8,
		msg: "did not find expected '-' indicator: this line is indented unlike the list's items, or is not an item (- …) of the list that starts at line 4"},
	{name: "a key indented too little", doc: "upstreams:\n  api:\n    url: http://127.0.0.1:8081\n    timeouts: {connect: 1s}\n   bad: 1\n", line: 5,
		msg: "did not find expected key: this line is indented unlike the keys before it, or is not a key: value (in the block that starts at line 2)"},
	{name: "a key indented too little at the top", doc: "mode: enforce\n listen: :8080\n", line: 2,
		msg: "mapping values are not allowed in this context: this line is indented deeper than the key mode on line 1, so YAML reads it as more of that key's value: indent it as that key"},
	{name: "a key indented deeper than the one above", doc: syntaxHead + "     limits: [1/1m]\n", line: 6,
		msg: "mapping values are not allowed in this context: this line is indented deeper than the key name on line 5, so YAML reads it as more of that key's value: indent it as that key"},
	{name: "a key indented deeper after a blank line", doc: syntaxHead + "\n     limits: [1/1m]\n", line: 7,
		msg: "mapping values are not allowed in this context: this line is indented deeper than the key name on line 5, so YAML reads it as more of that key's value: indent it as that key"},
	{name: "a value holding a colon", doc: syntaxHead + "    when: request.path: '/login'\n", line: 6,
		msg: `mapping values are not allowed in this context: the value of when holds ": ": quote the value, as in when: "…"`},
	{name: "a condition starting with a quoted string", doc: syntaxHead + "    when: 'x-api-key' in request.headers\n    limits: [1/1m]\n", line: 6,
		msg: `did not find expected key: the value of when starts with a quote, so YAML ends it at the closing quote and cannot read the rest; quote all of it: when: "'x-api-key' in request.headers"`},
	{name: "a condition starting with a double-quoted string", doc: syntaxHead + "    when: \"/x\" == request.path\n", line: 6,
		msg: `did not find expected key: the value of when starts with a quote, so YAML ends it at the closing quote and cannot read the rest; quote all of it: when: '"/x" == request.path'`},
	{name: "a condition with quotes on both sides", doc: syntaxHead + "    when: \"a\" == 'b'\n", line: 6,
		msg: `did not find expected key: the value of when starts with a quote, so YAML ends it at the closing quote and cannot read the rest; write it as a block: when: >- and the value on the next line, indented`},
	{name: "a block scalar header", doc: "mode: enforce\nlisten: :8080\nrules:\n  - name: a\n    when: |x\n      true\n", line: 5,
		msg: "did not find expected comment or line break"},
	{name: "a control character", doc: "mode: enforce\nlisten: :8080\nadmin: {token: \"a\x01b\"}\n", line: 3,
		msg: "control characters are not allowed"},
	{name: "an unknown anchor also quoted earlier", doc: "x-note: \"*standard\"\n" + syntaxHead + "    limits: *standard\n", line: 7,
		msg: "unknown anchor 'standard' referenced"},
	{name: "an unclosed list", doc: syntaxHead + "    limits: [100/5m\n  - name: b\n", line: 6,
		msg: "did not find expected ',' or ']'"},
	{name: "an unclosed quote", doc: syntaxHead + "    when: \"true\n    limits: [1/m]\n", line: 6,
		msg: "found unexpected end of stream"},
}

// TestSyntaxLine: a YAML syntax error is reported at the line to fix,
// whatever yaml.v3 counts from (its parser from 0, its scanner from 1) or
// names (the start of the scalar, block or list the error breaks).
func TestSyntaxLine(t *testing.T) {
	for _, tt := range syntaxLineTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tt.doc), "", nil)
			var ps Problems
			if !errors.As(err, &ps) || len(ps) != 1 {
				t.Fatalf("Parse(%q) error = %v, want one problem", tt.doc, err)
			}
			if got, want := ps[0], (Problem{File: "t.yaml", Line: tt.line, Msg: "YAML syntax: " + tt.msg}); !cmp.Equal(got, want) {
				t.Errorf("Parse(%q) problem (-got +want):\n%s", tt.doc, cmp.Diff(got, want))
			}
		})
	}
}

// TestReadErrorNamesTheUser: a file floodgate's user may not read (a
// container's numeric user, systemd's dynamic one, a file installed 0600
// by root) says which user must be able to read it; other causes are
// said as they are. Root reads any file, so the error is built here from
// the cause the system gives.
func TestReadErrorNamesTheUser(t *testing.T) {
	for _, tc := range []struct {
		cause error
		want  string
	}{
		{syscall.EACCES, "config: cannot read /etc/floodgate/floodgate.yaml: permission denied (floodgate runs as user 65532, group 65532: make the file readable by them)"},
		{syscall.ENOENT, "config: cannot read /etc/floodgate/floodgate.yaml: no such file or directory"},
	} {
		err := readError("/etc/floodgate/floodgate.yaml", tc.cause, 65532, 65532)
		if err.Error() != tc.want {
			t.Errorf("readError(%v) = %q, want %q", tc.cause, err, tc.want)
		}
		if !errors.Is(err, tc.cause) {
			t.Errorf("readError(%v) does not wrap its cause", tc.cause)
		}
	}
}
