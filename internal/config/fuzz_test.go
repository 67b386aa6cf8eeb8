package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
)

// FuzzParse: Parse and Validate never panic, and every problem they report
// is one line, placed inside the file.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.yaml")
	examples, _ := filepath.Glob("../../examples/*.yaml")
	for _, path := range append(seeds, examples...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "")
		f.Add(data, "production")
	}
	f.Add([]byte(envDoc), "staging")
	f.Add([]byte(lineDoc), "")
	for _, tt := range syntaxLineTests {
		f.Add([]byte(tt.doc), "")
	}
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		file, err := Parse("fuzz.yaml", data, env, lookupIn(fixtureEnv))
		var probs Problems
		if err != nil {
			var ok bool
			if probs, ok = err.(Problems); !ok {
				t.Fatalf("Parse error %T %v, want Problems", err, err)
			}
		}
		if file == nil {
			t.Fatal("Parse returned a nil File")
		}
		probs = append(probs, file.Validate()...)
		lines := countLines(data)
		for _, p := range probs {
			if s := p.Error(); strings.Contains(s, "\n") {
				t.Errorf("problem spans lines: %q", s)
			}
			if p.Line < 0 || p.Line > lines {
				t.Errorf("problem %q at line %d of a %d-line file", p.Error(), p.Line, lines)
			}
		}
		if len(probs) == 0 {
			// A valid file's config takes its defaults and stays valid.
			file.Config.ApplyDefaults()
			if again := file.Validate(); len(again) > 0 {
				t.Errorf("valid file invalid after ApplyDefaults:\n%v", again)
			}
		}
	})
}

// FuzzParseRoutePattern: a pattern that parses formats back to itself.
func FuzzParseRoutePattern(f *testing.F) {
	for _, s := range []string{"/", "/api/{type}/related/{id}", "/files/{p...}", "/a/", "//", "/{a}/{a}", "/v{x}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseRoutePattern(s)
		if err != nil {
			return
		}
		if got := p.String(); got != s {
			t.Errorf("ParseRoutePattern(%q).String() = %q", s, got)
		}
		_, _ = ParseRewrite(s, p)
	})
}

// FuzzParseDuration: a duration setting is within the range asked for,
// and reads as a rule's window of the same length, so the two syntaxes
// never drift apart.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"10s", " 1h30m ", "250ms", "1d", "366d", "367d", "0d", "-1d", "+2d", "1.5d",
		"1d12h", "d", "10", "", "9223372036854775807d", "-9223372036854775808d", "99999999999999999999d", "1e3s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s, time.Second, ratelimit.MaxWindow)
		if err != nil {
			return
		}
		if d < time.Second || d > ratelimit.MaxWindow {
			t.Fatalf("ParseDuration(%q) = %v, outside 1s to 366d", s, d)
		}
		if w, err := ratelimit.ParseWindow(s); err != nil || w != d {
			t.Errorf("ParseDuration(%q) = %v, but ParseWindow = %v, %v", s, d, w, err)
		}
	})
}
