package respond

import (
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompileMessage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		texts map[string]string
		langs []string
		parts map[string][]part // by tag; "" for the untagged text
	}{
		{name: "nil", texts: nil},
		{name: "empty", texts: map[string]string{}},
		{
			name:  "single string",
			texts: map[string]string{"": "Use the bulk archive."},
			langs: []string{""},
			parts: map[string][]part{"": {{lit: "Use the bulk archive."}}},
		},
		{
			name: "every placeholder and brace escapes",
			texts: map[string]string{
				"en": "{rule} {limit} {retry_after}s ({retry_after_human}) {{not}} }}",
				"es": "{retry_after_human}",
			},
			langs: []string{"en", "es"},
			parts: map[string][]part{
				"en": {
					{ph: phRule}, {lit: " "}, {ph: phLimit}, {lit: " "}, {ph: phRetryAfter},
					{lit: "s ("}, {ph: phRetryHuman}, {lit: ") {not} }"},
				},
				"es": {{ph: phRetryHuman}},
			},
		},
		{
			name:  "any language, in the conventional case",
			texts: map[string]string{"pt-br": "Devagar.", "ZH-HANT-tw": "慢一點。", "es-419": "Despacio.", "": "Slow down."},
			langs: []string{"", "es-419", "pt-BR", "zh-Hant-TW"},
			parts: map[string][]part{"pt-BR": {{lit: "Devagar."}}, "zh-Hant-TW": {{lit: "慢一點。"}}, "": {{lit: "Slow down."}}},
		},
		{
			name:  "a wait in words in a catalog language's variant",
			texts: map[string]string{"en-GB": "Wait {retry_after_human}.", "pt-BR": "Aguarde {retry_after} segundos."},
			langs: []string{"en-GB", "pt-BR"},
		},
		{name: "as many languages as allowed", texts: manyLanguages(32), langs: slices.Sorted(maps.Keys(manyLanguages(32)))},
		{
			name:  "newline and tab allowed",
			texts: map[string]string{"en": "a\n\tb"},
			langs: []string{"en"},
			parts: map[string][]part{"en": {{lit: "a\n\tb"}}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := CompileMessage(tt.texts)
			if err != nil {
				t.Fatalf("CompileMessage(%q): %v", tt.texts, err)
			}
			if len(tt.texts) == 0 {
				if m != nil {
					t.Errorf("CompileMessage(%q) = %+v, want nil", tt.texts, m)
				}
				return
			}
			if diff := cmp.Diff(m.Languages(), tt.langs); diff != "" {
				t.Errorf("Languages() (-got +want):\n%s", diff)
			}
			for tag, want := range tt.parts {
				got := m.any
				for _, t := range m.texts {
					if t.tag == tag {
						got = t.parts
					}
				}
				if diff := cmp.Diff(got, want, cmp.AllowUnexported(part{})); diff != "" {
					t.Errorf("parts[%q] (-got +want):\n%s", tag, diff)
				}
			}
		})
	}
}

func TestCanonicalTag(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"en", "en"},
		{"EN", "en"},
		{"pt-br", "pt-BR"},
		{"zh-hant-tw", "zh-Hant-TW"},
		{"ES-419", "es-419"},
		{"sr-LATN-rs", "sr-Latn-RS"},
		{"de-CH-1996", "de-CH-1996"},
		{"en-a-bb-CC", "en-a-bb-cc"},
		{"en-x-Hant-US", "en-x-hant-us"},
		{"sgn-BE-FR", "sgn-BE-FR"},
	} {
		if got := canonicalTag(tc.in); got != tc.want {
			t.Errorf("canonicalTag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// manyLanguages returns a message in n languages: aa-x0, aa-x1, …
func manyLanguages(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("aa-x%d", i)] = "x"
	}
	return m
}

func TestCompileMessageErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		texts map[string]string
		want  []string // substrings, one per problem
	}{
		{name: "unknown placeholder", texts: map[string]string{"en": "wait {seconds}"}, want: []string{"message[en]: unknown placeholder {seconds} at byte 5", "allowed: {rule}"}},
		{name: "empty placeholder", texts: map[string]string{"en": "a {} b"}, want: []string{"unknown placeholder {}"}},
		{name: "unclosed", texts: map[string]string{"en": "see {rule"}, want: []string{"unclosed '{' at byte 4"}},
		{name: "nested", texts: map[string]string{"en": "{a{rule}"}, want: []string{"unclosed '{' at byte 0"}},
		{name: "unmatched close", texts: map[string]string{"": "a } b"}, want: []string{"message: unmatched '}' at byte 2"}},
		{name: "not a tag", texts: map[string]string{"english": "x"}, want: []string{`message[english]: "english" is not a language tag such as en, es or pt-BR`}},
		{name: "one letter", texts: map[string]string{"e": "x"}, want: []string{`"e" is not a language tag`}},
		{name: "underscore", texts: map[string]string{"en_US": "x"}, want: []string{`"en_US" is not a language tag`}},
		{name: "empty subtag", texts: map[string]string{"en-": "x"}, want: []string{`"en-" is not a language tag`}},
		{name: "subtag too long", texts: map[string]string{"en-abcdefghi": "x"}, want: []string{`"en-abcdefghi" is not a language tag`}},
		{name: "digit primary", texts: map[string]string{"e1": "x"}, want: []string{`"e1" is not a language tag`}},
		{name: "non-ASCII", texts: map[string]string{"és": "x"}, want: []string{`"és" is not a language tag`}},
		{name: "one language twice", texts: map[string]string{"pt-BR": "x", "pt-br": "y"}, want: []string{`message[pt-br]: "pt-br" is the language of "pt-BR" too`}},
		{name: "human wait in a language without catalog", texts: map[string]string{"pt-BR": "Tente em {retry_after_human}."}, want: []string{"message[pt-BR]: {retry_after_human} is written in en or es only, the answers' own languages: use {retry_after} (seconds) in a pt-BR text"}},
		{name: "too many languages", texts: manyLanguages(33), want: []string{"33 languages, more than the 32 a message may have"}},
		{name: "empty text", texts: map[string]string{"en": " \n"}, want: []string{"empty text"}},
		{name: "control character", texts: map[string]string{"en": "a\x1b[31mb"}, want: []string{"control character U+001B at byte 1"}},
		{name: "line separator", texts: map[string]string{"en": "a\u2028b"}, want: []string{"control character U+2028"}},
		{name: "invalid UTF-8", texts: map[string]string{"en": "a\xffb"}, want: []string{"not valid UTF-8"}},
		{name: "too long", texts: map[string]string{"en": strings.Repeat("x", maxMessageBytes+1)}, want: []string{"more than the 4096 allowed"}},
		{
			name:  "every problem at once",
			texts: map[string]string{"en": "{foo} and {bar}", "es": "}", "d": "x"},
			want:  []string{"{foo}", "{bar}", "message[es]: unmatched", `"d"`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := CompileMessage(tt.texts)
			if err == nil {
				t.Fatalf("CompileMessage(%q) = %+v, want an error", tt.texts, m)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CompileMessage(%q) error %q does not mention %q", tt.texts, err, w)
				}
			}
		})
	}
}

// TestCompileMessageErrorsOneLineEach: each problem is a *MessageError
// of one line naming its text, so that a configuration reports it at the
// text's own field.
func TestCompileMessageErrorsOneLineEach(t *testing.T) {
	_, err := CompileMessage(map[string]string{"en": "{foo} and {bar}", "es": "}", "": "{"})
	var got []string
	for _, e := range leaves(err) {
		me, ok := e.(*MessageError)
		if !ok {
			t.Fatalf("CompileMessage error %q (%T) is not a *MessageError", e, e)
		}
		if strings.Contains(me.Error(), "\n") {
			t.Errorf("MessageError %q spans lines", me)
		}
		got = append(got, me.Tag)
	}
	if diff := cmp.Diff(got, []string{"", "en", "en", "es"}); diff != "" {
		t.Errorf("tags of the problems (-got +want):\n%s", diff)
	}
}

func TestAppendHuman(t *testing.T) {
	for _, tt := range []struct {
		secs   int64
		en, es string
	}{
		{1, "1 second", "1 segundo"},
		{30, "30 seconds", "30 segundos"},
		{90, "90 seconds", "90 segundos"},
		{120, "2 minutes", "2 minutos"},
		{121, "3 minutes", "3 minutos"},
		{300, "5 minutes", "5 minutos"},
		{3599, "1 hour", "1 hora"},
		{3600, "1 hour", "1 hora"},
		{3601, "1 hour and 1 minute", "1 hora y 1 minuto"},
		{5400, "1 hour and 30 minutes", "1 hora y 30 minutos"},
		{7200, "2 hours", "2 horas"},
		{86399, "1 day", "1 día"},
		{86400, "1 day", "1 día"},
		{90000, "1 day and 1 hour", "1 día y 1 hora"},
		{172800, "2 days", "2 días"},
	} {
		if got := string(appendHuman(nil, langEN, tt.secs)); got != tt.en {
			t.Errorf("appendHuman(en, %d) = %q, want %q", tt.secs, got, tt.en)
		}
		if got := string(appendHuman(nil, langES, tt.secs)); got != tt.es {
			t.Errorf("appendHuman(es, %d) = %q, want %q", tt.secs, got, tt.es)
		}
	}
}

// TestHumanNeedsNoEscaping backs render, which writes humanized
// durations unescaped into HTML and JSON.
func TestHumanNeedsNoEscaping(t *testing.T) {
	for l := range lang(numLangs) {
		for secs := int64(0); secs < 3*86400; secs += 7 {
			s := string(appendHuman(nil, l, secs))
			if html.EscapeString(s) != s || jsonFragment(s) != s {
				t.Fatalf("appendHuman(%s, %d) = %q needs escaping", catalogs[l].tag, secs, s)
			}
		}
	}
}

func TestCatalogComplete(t *testing.T) {
	for l := range lang(numLangs) {
		c := &catalogs[l]
		for k := Kind(1); int(k) <= numKinds; k++ {
			if c.titles[k] == "" || c.details[k] == "" {
				t.Errorf("catalog %s: %s has no title or detail", c.tag, k)
			}
			parts, err := parseMessage(c.details[k])
			if err != nil {
				t.Errorf("catalog %s: %s detail: %v", c.tag, k, err)
			}
			// Kinds that always carry Retry-After say when in the detail,
			// so the retry sentence is not added after it.
			if k.alwaysRetry() != usesRetry(parts) {
				t.Errorf("catalog %s: %s detail uses Retry-After = %t, want %t", c.tag, k, usesRetry(parts), k.alwaysRetry())
			}
			for ph := phRule; ph < numPlaceholders; ph++ {
				if ph != phRetryHuman && ph != phRetryAfter && partsUse(parts, ph) {
					t.Errorf("catalog %s: %s detail uses {%s}, which a rule may lack", c.tag, k, placeholderNames[ph])
				}
			}
		}
		if parts, err := parseMessage(c.retry); err != nil || !usesRetry(parts) {
			t.Errorf("catalog %s: retry sentence %q: %v, uses retry %t", c.tag, c.retry, err, usesRetry(parts))
		}
	}
}

func TestHTMLWithLinks(t *testing.T) {
	for _, tt := range []struct {
		in         string
		beforeHole bool
		want       string
	}{
		{"no link", false, "no link"},
		{"Use the bulk archive at https://example.org/bulk instead.", false,
			`Use the bulk archive at <a href="https://example.org/bulk">https://example.org/bulk</a> instead.`},
		{"(see http://a.example/x?y=1&z=<2>)", false,
			`(see <a href="http://a.example/x?y=1&amp;z=">http://a.example/x?y=1&amp;z=</a>&lt;2&gt;)`},
		{`at https://e.org/"onmouseover="x`, false,
			`at <a href="https://e.org/">https://e.org/</a>&#34;onmouseover=&#34;x`},
		{"javascript:alert(1) and xhttps://e.org", false, "javascript:alert(1) and xhttps://e.org"},
		{"https:// alone", false, "https:// alone"},
		{"https://user:pw@e.org", false, "https://user:pw@e.org"},
		{"at https://e.org/", true, "at https://e.org/"},
		{"at https://e.org/.", true, `at <a href="https://e.org/">https://e.org/</a>.`},
		{"two https://a.org, https://b.org", false,
			`two <a href="https://a.org">https://a.org</a>, <a href="https://b.org">https://b.org</a>`},
	} {
		if got := htmlWithLinks(tt.in, tt.beforeHole); got != tt.want {
			t.Errorf("htmlWithLinks(%q, %t) =\n%s\nwant\n%s", tt.in, tt.beforeHole, got, tt.want)
		}
	}
}

func FuzzCompileMessage(f *testing.F) {
	f.Add("Too many CSV downloads ({limit}). Use the bulk archive at https://example.org/bulk?a=1&b=2 instead.", "<rule>")
	f.Add("{rule} {limit} {retry_after} {retry_after_human} {{x}}", `"rule"`)
	f.Add("{unknown} } {", "")
	f.Add("<script>alert(1)</script> https://e.org/<script>", "</p><script>")
	f.Fuzz(func(t *testing.T, text, name string) {
		m, err := CompileMessage(map[string]string{"en": text})
		if err != nil {
			return
		}
		r, err := NewRule(RuleSpec{Name: name, Limit: "1/1s", Message: m})
		if err != nil {
			return
		}
		plain, _ := CompileMessage(map[string]string{"en": "x"})
		base, _ := NewRule(RuleSpec{Name: "x", Message: plain})
		render := func(r *Rule, f format) string {
			return string(buildTemplate(RateLimited, 1, langEN, f, r).render(nil, langEN, 5, `"x"`))
		}
		// The only markup is the page's own and the links made from URLs.
		body := render(r, formatHTML)
		want := strings.Count(render(base, formatHTML), "<") + 2*strings.Count(body, "<a href=")
		if m.uses(phRetryAfter) || m.uses(phRetryHuman) {
			want -= 2 // no retry paragraph
		}
		if got := strings.Count(body, "<"); got != want {
			t.Fatalf("message %q, rule %q: HTML body has %d '<', want %d:\n%s", text, name, got, want, body)
		}
		checkJSON(t, render(r, formatJSON))
	})
}
