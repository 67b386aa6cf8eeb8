package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMessageLanguages: a rule's message may be written in any language;
// an answer gives the text Accept-Language prefers (a range selecting a
// tag it begins, or one that begins with it), else the default
// language's, else the first; its title stays in the catalog's English
// or Spanish.
func TestMessageLanguages(t *testing.T) {
	s := startYAML(t, `
upstreams: {api: {url: "http://127.0.0.1:9"}}
rules:
  - name: three
    action: deny
    when: request.path == '/three'
    message: {en: Closed., pt-BR: Fechado., zh-hant: 關閉。}
  - name: untagged
    action: deny
    when: request.path == '/untagged'
    message: {"": Default., pt-BR: Padrão.}
  - name: portuguese
    action: deny
    when: request.path == '/portuguese'
    message: {pt-BR: Só em português.}
`, nil)
	for _, tc := range []struct {
		path, acceptLanguage       string
		detail, contentLang, title string
	}{
		{"/three", "", "Closed.", "en", "Forbidden"},
		{"/three", "en-US", "Closed.", "en", "Forbidden"},
		{"/three", "pt-BR", "Fechado.", "pt-BR, en", "Forbidden"},
		{"/three", "PT-br", "Fechado.", "pt-BR, en", "Forbidden"},
		{"/three", "pt", "Fechado.", "pt-BR, en", "Forbidden"},
		{"/three", "pt-BR, es;q=0.5", "Fechado.", "pt-BR, es", "Prohibido"},
		{"/three", "pt-PT", "Closed.", "en", "Forbidden"},
		{"/three", "zh-Hant-TW", "關閉。", "zh-Hant, en", "Forbidden"},
		{"/three", "zh", "關閉。", "zh-Hant, en", "Forbidden"},
		{"/three", "es", "Closed.", "en", "Forbidden"},
		{"/three", "fr, *;q=0.1", "Closed.", "en", "Forbidden"},
		{"/three", "en;q=0, pt-BR;q=0.5", "Fechado.", "pt-BR, en", "Forbidden"},
		{"/three", "en;q=0", "Closed.", "en", "Forbidden"},
		{"/three", "pt-BR;q=0.5, en", "Closed.", "en", "Forbidden"},
		{"/three", "pt-BR;q=0, pt", "Closed.", "en", "Forbidden"},
		{"/three", "pt_BR", "Closed.", "en", "Forbidden"},
		{"/three", strings.Repeat("fr, ", 2000) + "pt-BR", "Closed.", "en", "Forbidden"},
		{"/untagged", "", "Default.", "en", "Forbidden"},
		{"/untagged", "fr", "Default.", "en", "Forbidden"},
		{"/untagged", "pt", "Padrão.", "pt-BR, en", "Forbidden"},
		{"/untagged", "es", "Default.", "en", "Forbidden"},
		{"/portuguese", "", "Só em português.", "pt-BR, en", "Forbidden"},
		{"/portuguese", "es-MX", "Só em português.", "pt-BR, es", "Prohibido"},
	} {
		req, err := http.NewRequest("GET", s.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.acceptLanguage != "" {
			req.Header.Set("Accept-Language", tc.acceptLanguage)
		}
		resp, err := frontClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var p struct{ Title, Detail string }
		if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Fatalf("GET %s: %d %v\n%s", tc.path, resp.StatusCode, err, body)
		}
		got := []string{p.Detail, resp.Header.Get("Content-Language"), p.Title}
		want := []string{tc.detail, tc.contentLang, tc.title}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("GET %s, Accept-Language %.40q: detail, Content-Language, title = %q, want %q", tc.path, tc.acceptLanguage, got, want)
		}
	}

	// The page says which language its alert is in.
	req, _ := http.NewRequest("GET", s.URL+"/three", nil)
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Accept-Language", "pt-BR")
	resp, err := frontClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`<html lang="en">`, `<p role="alert" lang="pt-BR">Fechado.</p>`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}
