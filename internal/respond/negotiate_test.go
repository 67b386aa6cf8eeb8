package respond

import (
	"strings"
	"testing"
)

const (
	firefoxAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	chromeAccept  = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
)

// formatTests are also the seed corpus of FuzzNegotiateFormat.
var formatTests = []struct {
	name   string
	accept []string
	want   format
}{
	{name: "no field", accept: nil, want: formatJSON},
	{name: "empty", accept: []string{""}, want: formatJSON},
	{name: "curl", accept: []string{"*/*"}, want: formatJSON},
	{name: "json", accept: []string{"application/json"}, want: formatJSON},
	{name: "problem json", accept: []string{"application/problem+json"}, want: formatJSON},
	{name: "application wildcard", accept: []string{"application/*"}, want: formatJSON},
	{name: "firefox", accept: []string{firefoxAccept}, want: formatHTML},
	{name: "chrome", accept: []string{chromeAccept}, want: formatHTML},
	{name: "html", accept: []string{"text/html"}, want: formatHTML},
	{name: "plain", accept: []string{"text/plain"}, want: formatText},
	{name: "text wildcard", accept: []string{"text/*"}, want: formatText},
	{name: "R httr", accept: []string{"application/json, text/xml, application/xml, */*"}, want: formatJSON},
	{name: "explicit plain beats any", accept: []string{"text/plain, */*"}, want: formatText},
	{name: "explicit plain beats any, any first", accept: []string{"*/*, text/plain"}, want: formatText},
	{name: "higher q wins", accept: []string{"text/html;q=0.5, application/json"}, want: formatJSON},
	{name: "higher q wins html", accept: []string{"application/json;q=0.5, text/html"}, want: formatHTML},
	{name: "tie between exact types goes to json", accept: []string{"text/html, application/json"}, want: formatJSON},
	{name: "tie between exact types goes to json, reversed", accept: []string{"application/json, text/html"}, want: formatJSON},
	{name: "nothing acceptable", accept: []string{"*/*;q=0"}, want: formatJSON},
	{name: "all refused but html", accept: []string{"*/*;q=0, text/html"}, want: formatHTML},
	{name: "json refused", accept: []string{"application/json;q=0, */*"}, want: formatText},
	{name: "problem json refused explicitly", accept: []string{"application/problem+json;q=0, application/json, text/html;q=0.5"}, want: formatHTML},
	{name: "unrelated type", accept: []string{"image/png"}, want: formatJSON},
	{name: "q above 1", accept: []string{"text/html;q=2"}, want: formatJSON},
	{name: "q NaN", accept: []string{"text/html;q=NaN"}, want: formatJSON},
	{name: "q too precise", accept: []string{"text/html;q=0.0001"}, want: formatJSON},
	{name: "q 1.000", accept: []string{"text/html;q=1.000"}, want: formatHTML},
	{name: "q 1.001", accept: []string{"text/html;q=1.001"}, want: formatJSON},
	{name: "q negative", accept: []string{"text/html;q=-1"}, want: formatJSON},
	{name: "q empty", accept: []string{"text/html;q="}, want: formatJSON},
	{name: "q without value", accept: []string{"text/html;q"}, want: formatJSON},
	{name: "q upper case", accept: []string{"text/plain;Q=0.5, application/json;q=0.4"}, want: formatText},
	{name: "tiny q still acceptable", accept: []string{"text/html;q=0.001, text/plain;q=0"}, want: formatHTML},
	{name: "upper case type", accept: []string{"TEXT/HTML"}, want: formatHTML},
	{name: "other parameters", accept: []string{"text/html;level=1;q=0.9, application/json;q=0.8"}, want: formatHTML},
	{name: "quoted comma", accept: []string{`text/html; foo="a,b;q=0"; q=0.9, application/json;q=0.8`}, want: formatHTML},
	{name: "unterminated quote", accept: []string{`text/html; foo="a, application/json`}, want: formatHTML},
	{name: "spaces", accept: []string{"  text/plain ; q=0.9 ,\tapplication/json ; q=0.1 "}, want: formatText},
	{name: "second q malformed", accept: []string{"text/html;q=0.5;q=2"}, want: formatJSON},
	{name: "quoted q", accept: []string{`text/html;q="0.5"`}, want: formatJSON},
	{name: "escaped quote in parameter", accept: []string{`text/html;foo="a\",b;q=0";q=0.2, application/json;q=0.1`}, want: formatHTML},
	{name: "empty parameter", accept: []string{"text/html;;q=0.9, application/json;q=0.8"}, want: formatHTML},
	{name: "parameter without value", accept: []string{"text/html;foo;q=0.9, application/json;q=0.8"}, want: formatHTML},
	{name: "weight without range", accept: []string{";q=1, text/plain"}, want: formatText},
	{name: "garbage", accept: []string{"garbage"}, want: formatJSON},
	{name: "separators only", accept: []string{";;;,,,"}, want: formatJSON},
	{name: "slash", accept: []string{"/"}, want: formatJSON},
	{name: "wildcard type with subtype", accept: []string{"*/html"}, want: formatJSON},
	{name: "missing subtype", accept: []string{"text/"}, want: formatJSON},
	{name: "space in range", accept: []string{"text /html"}, want: formatJSON},
	{name: "non-ASCII", accept: []string{"tëxt/html, text/htmlé"}, want: formatJSON},
	{name: "invalid UTF-8", accept: []string{"text/\xffhtml"}, want: formatJSON},
	{name: "several lines", accept: []string{"text/plain;q=0.5", "text/html"}, want: formatHTML},
	{name: "huge field, match past the bound", accept: []string{strings.Repeat("a/b, ", 2000) + "text/html"}, want: formatJSON},
	{name: "huge field, match before the bound", accept: []string{"text/html, " + strings.Repeat("a/b, ", 2000)}, want: formatHTML},
	{name: "huge element", accept: []string{"text/html;x=" + strings.Repeat("y", 10000)}, want: formatJSON},
	{name: "many lines", accept: append(make([]string, 5000), "text/html"), want: formatJSON},
}

func TestNegotiateFormat(t *testing.T) {
	for _, tt := range formatTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := negotiateFormat(tt.accept); got != tt.want {
				t.Errorf("negotiateFormat(%.80q) = %s, want %s", tt.accept, formatNames[got], formatNames[tt.want])
			}
		})
	}
}

const all = 1<<numLangs - 1

// languageTests are also the seed corpus of FuzzNegotiateLanguage.
var languageTests = []struct {
	name    string
	header  []string
	offered uint8
	def     lang
	want    lang
}{
	{name: "no field", header: nil, offered: all, want: langEN},
	{name: "empty", header: []string{""}, offered: all, want: langEN},
	{name: "es", header: []string{"es"}, offered: all, want: langES},
	{name: "es-MX", header: []string{"es-MX"}, offered: all, want: langES},
	{name: "es-419", header: []string{"es-419"}, offered: all, want: langES},
	{name: "en-US browser", header: []string{"en-US,en;q=0.9,es;q=0.8"}, offered: all, want: langEN},
	{name: "es-MX browser", header: []string{"es-MX,es;q=0.9,en;q=0.8"}, offered: all, want: langES},
	{name: "exact range beats region", header: []string{"es-MX;q=0.1, es;q=0.9, en;q=0.5"}, offered: all, want: langES},
	{name: "unsupported", header: []string{"fr"}, offered: all, want: langEN},
	{name: "unsupported then es", header: []string{"fr-CH, fr;q=0.9, es;q=0.5"}, offered: all, want: langES},
	{name: "wildcard", header: []string{"*"}, offered: all, want: langEN},
	{name: "named beats wildcard", header: []string{"*, es"}, offered: all, want: langES},
	{name: "wildcard with higher q", header: []string{"*;q=0.5, en;q=0.1"}, offered: all, want: langES},
	{name: "en refused", header: []string{"en;q=0, *"}, offered: all, want: langES},
	{name: "es refused", header: []string{"es;q=0"}, offered: all, want: langEN},
	{name: "all refused", header: []string{"*;q=0"}, offered: all, want: langEN},
	{name: "upper case", header: []string{"ES"}, offered: all, want: langES},
	{name: "mixed case", header: []string{"Es-mX"}, offered: all, want: langES},
	{name: "q above 1", header: []string{"es;q=2"}, offered: all, want: langEN},
	{name: "q NaN", header: []string{"es;q=NaN"}, offered: all, want: langEN},
	{name: "q 1.", header: []string{"es;q=1."}, offered: all, want: langES},
	{name: "tie goes to first listed", header: []string{"es;q=0.5, en;q=0.5"}, offered: all, want: langES},
	{name: "tie goes to first listed, reversed", header: []string{"en;q=0.5, es;q=0.5"}, offered: all, want: langEN},
	{name: "non-ASCII", header: []string{"español"}, offered: all, want: langEN},
	{name: "underscore", header: []string{"es_MX"}, offered: all, want: langEN},
	{name: "primary too long", header: []string{"esxxxxxxxx"}, offered: all, want: langEN},
	{name: "empty subtag", header: []string{"es-"}, offered: all, want: langEN},
	{name: "digit primary", header: []string{"e5"}, offered: all, want: langEN},
	{name: "garbage", header: []string{";;q=,,=;"}, offered: all, want: langEN},
	{name: "several lines", header: []string{"fr", "es;q=0.3"}, offered: all, want: langES},
	{name: "huge field", header: []string{strings.Repeat("fr, ", 2000) + "es"}, offered: all, want: langEN},
	{name: "only es offered", header: []string{"en"}, offered: 1 << langES, want: langES},
	{name: "only en offered, default es", header: []string{"es"}, offered: 1 << langEN, def: langES, want: langEN},
	{name: "default es", header: nil, offered: all, def: langES, want: langES},
	{name: "default es, unsupported", header: []string{"fr"}, offered: all, def: langES, want: langES},
	{name: "default es, wildcard", header: []string{"*"}, offered: all, def: langES, want: langES},
	{name: "default es, asks en", header: []string{"en-GB"}, offered: all, def: langES, want: langEN},
}

func TestNegotiateLanguage(t *testing.T) {
	for _, tt := range languageTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := negotiateLanguage(tt.header, tt.offered, tt.def); got != tt.want {
				t.Errorf("negotiateLanguage(%.80q, %b, %s) = %s, want %s", tt.header, tt.offered, catalogs[tt.def].tag, catalogs[got].tag, catalogs[tt.want].tag)
			}
		})
	}
}

func TestParseQ(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"0", 0, true}, {"0.", 0, true}, {"0.5", 500, true}, {"0.05", 50, true}, {"0.001", 1, true},
		{"0.999", 999, true}, {"1", 1000, true}, {"1.", 1000, true}, {"1.000", 1000, true},
		{"1.001", 0, false}, {"0.0001", 0, false}, {"2", 0, false}, {"-0", 0, false}, {".5", 0, false},
		{"NaN", 0, false}, {"", 0, false}, {"0,5", 0, false}, {"0.5x", 0, false}, {"1e0", 0, false},
	} {
		if got, ok := parseQ(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("parseQ(%q) = %d, %t, want %d, %t", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNegotiateDoesNotAllocate(t *testing.T) {
	accept := []string{chromeAccept}
	lang := []string{"es-MX,es;q=0.9,en-US;q=0.8,en;q=0.7"}
	if n := testing.AllocsPerRun(1000, func() { negotiateFormat(accept) }); n != 0 {
		t.Errorf("negotiateFormat allocs = %v, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { negotiateLanguage(lang, all, langEN) }); n != 0 {
		t.Errorf("negotiateLanguage allocs = %v, want 0", n)
	}
	m, err := CompileMessage(map[string]string{"": "x", "en-GB": "x", "pt-BR": "x", "zh-Hant": "x"})
	if err != nil {
		t.Fatal(err)
	}
	header := []string{"pt-PT, zh;q=0.9, *;q=0.1"}
	if n := testing.AllocsPerRun(1000, func() { m.choose(header, langES) }); n != 0 {
		t.Errorf("Message.choose allocs = %v, want 0", n)
	}
}

func FuzzNegotiateFormat(f *testing.F) {
	for _, tt := range formatTests {
		if len(tt.accept) == 1 && len(tt.accept[0]) < 1000 {
			f.Add(tt.accept[0])
		}
	}
	f.Fuzz(func(t *testing.T, accept string) {
		// Split on newlines so the fuzzer also explores several field lines.
		got := negotiateFormat(strings.Split(accept, "\n"))
		if got >= numFormats {
			t.Fatalf("negotiateFormat(%q) = %d, not a format", accept, got)
		}
	})
}

func FuzzNegotiateLanguage(f *testing.F) {
	for _, tt := range languageTests {
		if len(tt.header) == 1 && len(tt.header[0]) < 1000 {
			f.Add(tt.header[0], tt.offered, uint8(tt.def))
		}
	}
	f.Fuzz(func(t *testing.T, header string, offered, def uint8) {
		offered &= all
		if offered == 0 {
			offered = all
		}
		d := lang(def % uint8(numLangs))
		got := negotiateLanguage(strings.Split(header, "\n"), offered, d)
		if got >= numLangs || offered&(1<<got) == 0 {
			t.Fatalf("negotiateLanguage(%q, %b, %d) = %d, not an offered language", header, offered, d, got)
		}
	})
}

// textTests are also the seed corpus of FuzzChooseText: the message
// {en-GB, es, pt-BR, pt-PT, zh-Hant} and what an answer to
// header is written in: the text's tag ("" for the untagged one) and the
// catalog language of its titles.
var textTests = []struct {
	name   string
	header string
	def    lang
	text   string
	cat    lang
}{
	{name: "no field", header: "", text: "en-GB", cat: langEN},
	{name: "exact", header: "pt-BR", text: "pt-BR", cat: langEN},
	{name: "case", header: "PT-pt", text: "pt-PT", cat: langEN},
	{name: "range longer than the tag", header: "es-MX", text: "es", cat: langES},
	{name: "range shorter than the tag", header: "zh", text: "zh-Hant", cat: langEN},
	{name: "range shorter, two tags: the first", header: "pt", text: "pt-BR", cat: langEN},
	{name: "region of no text", header: "pt-AO", text: "en-GB", cat: langEN},
	{name: "default en: en-GB", header: "en", text: "en-GB", cat: langEN},
	{name: "another language: the default's", header: "fr", text: "en-GB", cat: langEN},
	{name: "another language, default es", header: "fr", def: langES, text: "es", cat: langES},
	{name: "titles from the field", header: "pt-BR, es;q=0.1", text: "pt-BR", cat: langES},
	{name: "q decides", header: "pt-BR;q=0.2, es;q=0.3", text: "es", cat: langES},
	{name: "refused text", header: "pt-BR;q=0, pt", text: "pt-PT", cat: langEN},
	{name: "wildcard: the default's", header: "*", text: "en-GB", cat: langEN},
	{name: "wildcard, default es", header: "*", def: langES, text: "es", cat: langES},
	{name: "named beats wildcard", header: "*, pt-PT", text: "pt-PT", cat: langEN},
	{name: "wildcard's higher q", header: "*, pt-PT;q=0.5", text: "en-GB", cat: langEN},
	{name: "first listed", header: "pt-PT, pt-BR", text: "pt-PT", cat: langEN},
	{name: "exact beats prefix at one q", header: "pt-br;q=0.5, pt;q=0.5, zh;q=0.5", text: "pt-BR", cat: langEN},
	{name: "malformed", header: "pt_BR, e5, -, pt-", text: "en-GB", cat: langEN},
	{name: "garbage", header: ";;q=,,=;", text: "en-GB", cat: langEN},
}

func TestChooseText(t *testing.T) {
	m, err := CompileMessage(map[string]string{"en-GB": "x", "es": "x", "pt-BR": "x", "pt-PT": "x", "zh-Hant": "x"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range textTests {
		t.Run(tt.name, func(t *testing.T) {
			slot, cat := m.choose([]string{tt.header}, tt.def)
			_, tag := m.text(slot)
			if tag != tt.text || cat != tt.cat {
				t.Errorf("choose(%q, %s) = %q, %s; want %q, %s", tt.header, catalogs[tt.def].tag, tag, catalogs[cat].tag, tt.text, catalogs[tt.cat].tag)
			}
		})
	}
	// The untagged text is the default language's, when no text has its tag.
	untagged, _ := CompileMessage(map[string]string{"": "Default", "pt-BR": "x"})
	for _, tt := range []struct {
		header string
		def    lang
		text   string
		cat    lang
	}{
		{"en", langEN, "", langEN},
		{"es", langES, "", langES},
		{"es", langEN, "", langEN},
		{"pt", langES, "pt-BR", langES},
	} {
		slot, cat := untagged.choose([]string{tt.header}, tt.def)
		if _, tag := untagged.text(slot); tag != tt.text || cat != tt.cat {
			t.Errorf("untagged: choose(%q, %s) = %q, %s; want %q, %s", tt.header, catalogs[tt.def].tag, tag, catalogs[cat].tag, tt.text, catalogs[tt.cat].tag)
		}
	}
}

func FuzzChooseText(f *testing.F) {
	for _, tt := range textTests {
		f.Add(tt.header, uint8(tt.def))
	}
	m, err := CompileMessage(map[string]string{"en-GB": "x", "es": "x", "pt-BR": "x", "pt-PT": "x", "zh-Hant": "x"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, header string, def uint8) {
		d := lang(def % uint8(numLangs))
		slot, cat := m.choose(strings.Split(header, "\n"), d)
		if slot < 0 || slot >= m.slots() || cat >= numLangs {
			t.Fatalf("choose(%q, %d) = %d, %d: not a text and a catalog language", header, d, slot, cat)
		}
	})
}
