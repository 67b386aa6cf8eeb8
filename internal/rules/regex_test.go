package rules

import (
	"regexp"
	"strings"
	"testing"
)

func TestPrefilterWords(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		words   []string // nil: no prefilter
		fold    bool
	}{
		{`/(scores|counts|variants/data|mapped-variants)/?$`, []string{"scores", "counts", "variants/data", "mapped-variants"}, false},
		{`(?i)(GPTBot|ChatGPT-User|CCBot)`, []string{"gptbot", "hatgpt-user", "cbot"}, true}, // the parser factors the common "C" out
		{`^/api/v1/`, []string{"/api/v1/"}, false},
		{`(?i)bot`, []string{"bot"}, true},
		{`a+bc`, []string{"bc"}, false},
		{`(ab|c)`, nil, false},        // a one-byte word: not worth it
		{`(ab)?cd*`, nil, false},      // "c" only
		{`.*`, nil, false},            // nothing required
		{`(foo|.*)`, nil, false},      // one branch requires nothing
		{`(?i)caf\x{e9}`, nil, false}, // non-ASCII folding
		{`x{2,}yz`, []string{"yz"}, false},
		{`[abc]def`, []string{"def"}, false},
	} {
		pf := newPrefilter(tc.pattern)
		switch {
		case tc.words == nil && pf != nil:
			t.Errorf("%s: prefilter %v, want none", tc.pattern, pf.words)
		case tc.words != nil && pf == nil:
			t.Errorf("%s: no prefilter, want %v", tc.pattern, tc.words)
		case pf != nil && (strings.Join(pf.words, "|") != strings.Join(tc.words, "|") || pf.fold != tc.fold):
			t.Errorf("%s: %v fold %v, want %v fold %v", tc.pattern, pf.words, pf.fold, tc.words, tc.fold)
		}
	}
}

// TestMatcherAgreesWithRegexp: hostile and ordinary inputs, the example
// rules' patterns.
func TestMatcherAgreesWithRegexp(t *testing.T) {
	patterns := []string{
		`/(scores|counts|variants/data|mapped-variants)/?$`,
		`(?i)(GPTBot|ChatGPT-User|ClaudeBot|anthropic-ai|CCBot|PerplexityBot|Bytespider|Google-Extended|Amazonbot|meta-externalagent)`,
		`(?i)sk`, `^/api/`, `(?i)bot`,
	}
	inputs := []string{
		"", "/", "/api/v1/score-sets/urn:mavedb:1/scores", "/api/v1/score-sets/urn:mavedb:1/scores/", "/scores/x",
		"Mozilla/5.0 (compatible; GPTBot/1.2)", "gptbot", "GPTBOT", "Bytespider", "BYTE\u017fPIDER", "\u212aSK", "\u017fk",
		"\u212a", "bytespider\xff", strings.Repeat("a", 600) + "GPTBot", strings.Repeat("x", 600), "ClaudeBot",
		"/api/", "/API/", "robot", "ROBOT", "rob\u00f6t",
	}
	for _, p := range patterns {
		m, err := newMatcher(p)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(p)
		for _, in := range inputs {
			if got, want := m.MatchString(in), re.MatchString(in); got != want {
				t.Errorf("%q on %q: %v, regexp says %v", p, in, got, want)
			}
		}
	}
}

func FuzzPrefilter(f *testing.F) {
	f.Add(`(?i)(GPTBot|CCBot)`, "Mozilla GPTBOT")
	f.Add(`/(scores|counts)/?$`, "/x/scores/")
	f.Add(`(?i)ks`, "\u212a\u017f")
	f.Add(`a(bc|de)+f`, "xxabcdef")
	f.Fuzz(func(t *testing.T, pattern, in string) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return
		}
		m, err := newMatcher(pattern)
		if err != nil {
			t.Fatalf("newMatcher(%q): %v", pattern, err)
		}
		if got, want := m.MatchString(in), re.MatchString(in); got != want {
			t.Fatalf("%q on %q: %v, regexp says %v (prefilter %+v)", pattern, in, got, want, m.pf)
		}
	})
}

func BenchmarkMatches(b *testing.B) {
	ua := `(?i)(GPTBot|ChatGPT-User|ClaudeBot|anthropic-ai|CCBot|PerplexityBot|Bytespider|Google-Extended|Amazonbot|meta-externalagent)`
	for _, c := range []struct{ name, pattern, in string }{
		{"path", `/(scores|counts|variants/data|mapped-variants)/?$`, "/api/v1/score-sets/urn:mavedb:00000001-a-1"},
		{"user-agent", ua, "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"},
	} {
		m, _ := newMatcher(c.pattern)
		re := regexp.MustCompile(c.pattern)
		b.Run(c.name+"/regexp", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				re.MatchString(c.in)
			}
		})
		b.Run(c.name+"/prefiltered", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.MatchString(c.in)
			}
		})
	}
}
