package config

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden files with the current output")

// fixtureEnv is the environment every fixture is loaded with.
var fixtureEnv = map[string]string{
	"SET":         "value",
	"EMPTY":       "",
	"PORT":        "8080",
	"MAX_KEYS":    "4096",
	"PROXIES":     "10.0.0.0/8, 192.168.0.1",
	"UPSTREAM":    "http://127.0.0.1:8081",
	"HOSTILE":     "a: b\n- c\n${SET}",
	"NOT_A_COUNT": "lots",
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}
}

var envDirective = regexp.MustCompile(`(?m)^# env: (\S+)$`)

// loadFixture loads a testdata file as the CLI would: Load, then Validate,
// with the environment named by a "# env: NAME" line, if any.
func loadFixture(t *testing.T, path string) (*File, Problems) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := ""
	if m := envDirective.FindSubmatch(data); m != nil {
		env = string(m[1])
	}
	f, err := Parse(filepath.Base(path), data, env, lookupIn(fixtureEnv))
	var probs Problems
	if err != nil {
		var ok bool
		if probs, ok = err.(Problems); !ok {
			t.Fatalf("Parse(%s) error = %v, want Problems", path, err)
		}
	}
	if f != nil {
		probs = append(probs, f.Validate()...)
	}
	return f, probs
}

// TestInvalidFixtures loads every testdata/invalid/NAME.yaml, one failure
// mode each, and compares its problems with NAME.golden.
func TestInvalidFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			_, probs := loadFixture(t, path)
			if len(probs) == 0 {
				t.Fatalf("%s: no problems, want some", path)
			}
			got := probs.Error() + "\n"
			golden := strings.TrimSuffix(path, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(got, string(want)); diff != "" {
				t.Errorf("problems of %s differ from %s (-got +want):\n%s", path, golden, diff)
			}
		})
	}
}

// exampleSecrets are the variables examples/openverse.yaml requires
// outside development.
var exampleSecrets = map[string]string{
	"FLOODGATE_ADMIN_TOKEN": "example-admin-token-0123456789",
	"HMAC_SIGNING_SECRET":   "example-signing-secret-0123456789-0123456789",
	"API_CLIENT_ID":         "example-client",
	"API_CLIENT_SECRET":     "example-client-secret",
}

// TestValidFixtures loads every testdata/valid/*.yaml and every example,
// and wants no problem at all.
func TestValidFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	examples, _ := filepath.Glob("../../examples/*.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	for _, path := range append(files, examples...) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Examples get only the secrets they say staging and
			// production need (development needs none); their defaults
			// must do for the rest.
			lookup := lookupIn(exampleSecrets)
			if strings.HasPrefix(path, "testdata/") {
				lookup = lookupIn(fixtureEnv)
			}
			base, err := Parse(path, data, "", lookup)
			if err != nil {
				t.Fatalf("Parse(%s):\n%v", path, err)
			}
			// The base alone, and every environment applied to it.
			for _, env := range append([]string{""}, base.Environments...) {
				lookup := lookup
				if env == "development" {
					lookup = func(string) (string, bool) { return "", false }
				}
				f, err := Parse(path, data, env, lookup)
				if err != nil {
					t.Fatalf("Parse(%s, env %q):\n%v", path, env, err)
				}
				if probs := f.Validate(); len(probs) > 0 {
					t.Fatalf("Validate(%s, env %q):\n%v", path, env, probs)
				}
			}
		})
	}
}
