package respond

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"net/url"
	"strconv"
	"strings"
)

// A template is one body, static per (rule, kind, language, format),
// with holes for the few values that change per answer.
type template struct {
	segs []segment
}

type segKind uint8

const (
	segLit          segKind = iota
	segRetrySeconds         // Retry-After in seconds
	segRetryHuman           // Retry-After in words, in the template's language
	segViolated             // the JSON string naming the refusing policy
)

type segment struct {
	lit     string
	kind    segKind
	ifRetry bool // written only when the answer has a Retry-After
}

// render appends the body to dst.
func (t *template) render(dst []byte, l lang, retry int64, violated string) []byte {
	for i := range t.segs {
		s := &t.segs[i]
		if s.ifRetry && retry <= 0 {
			continue
		}
		switch s.kind {
		case segLit:
			dst = append(dst, s.lit...)
		case segRetrySeconds:
			dst = strconv.AppendInt(dst, retry, 10)
		case segRetryHuman:
			dst = appendHuman(dst, l, retry)
		case segViolated:
			dst = append(dst, violated...)
		}
	}
	return dst
}

type builder struct {
	segs    []segment
	ifRetry bool
}

func (b *builder) lit(s string) {
	if s == "" {
		return
	}
	if n := len(b.segs); n > 0 && b.segs[n-1].kind == segLit && b.segs[n-1].ifRetry == b.ifRetry {
		b.segs[n-1].lit += s
		return
	}
	b.segs = append(b.segs, segment{lit: s, ifRetry: b.ifRetry})
}

func (b *builder) hole(k segKind) {
	b.segs = append(b.segs, segment{kind: k, ifRetry: b.ifRetry})
}

// text writes parts with escape applied to literals; {rule} and {limit}
// are literals by now. escape's second argument reports whether the
// literal runs into a placeholder.
func (b *builder) text(parts []part, escape func(s string, beforeHole bool) string) {
	for i, p := range parts {
		switch p.ph {
		case phNone:
			b.lit(escape(p.lit, i+1 < len(parts)))
		case phRetryAfter:
			b.hole(segRetrySeconds)
		case phRetryHuman:
			b.hole(segRetryHuman)
		}
	}
}

// resolve substitutes the rule's static values into parts, leaving only
// literals and the Retry-After placeholders, and merges adjacent literals.
func resolve(parts []part, rule, limit string) []part {
	var out []part
	add := func(s string) {
		if n := len(out); n > 0 && out[n-1].ph == phNone {
			out[n-1].lit += s
		} else if s != "" {
			out = append(out, part{lit: s})
		}
	}
	for _, p := range parts {
		switch p.ph {
		case phNone:
			add(p.lit)
		case phRule:
			add(rule)
		case phLimit:
			add(limit)
		default:
			out = append(out, p)
		}
	}
	return out
}

func usesRetry(parts []part) bool {
	return partsUse(parts, phRetryAfter) || partsUse(parts, phRetryHuman)
}

var (
	defaultDetails [numKinds + 1][numLangs][]part
	retryParts     [numLangs][]part
)

func init() {
	for l := range lang(numLangs) {
		for k := Kind(1); int(k) <= numKinds; k++ {
			defaultDetails[k][l] = mustParse(catalogs[l].details[k])
		}
		retryParts[l] = mustParse(catalogs[l].retry)
	}
}

// buildTemplate builds the body of kind k with the message's text slot,
// in catalog language l and format f, for rule r (noRule when no rule
// decided).
func buildTemplate(k Kind, slot int, l lang, f format, r *Rule) *template {
	c := &catalogs[l]
	detail := defaultDetails[k][l]
	// detailLang is the HTML lang of a detail in another language than
	// the page's.
	detailLang := ""
	if r.msg != nil {
		var tag string
		detail, tag = r.msg.text(slot)
		if tag != "" && tag != c.tag {
			detailLang = tag
		}
	}
	detail = resolve(detail, r.name, r.limit)
	// A detail that does not say when to retry is followed by the
	// catalog's retry sentence in the HTML and text bodies.
	var retry []part
	if !usesRetry(detail) {
		retry = retryParts[l]
	}
	status := strconv.Itoa(k.Status())
	title := c.titles[k]
	var b builder
	switch f {
	case formatJSON:
		b.lit(`{"type":` + jsonString(k.ProblemType()) + `,"title":` + jsonString(title) +
			`,"status":` + status + `,"detail":"`)
		b.text(detail, func(s string, _ bool) string { return jsonFragment(s) })
		b.lit(`"`)
		if r.name != "" {
			b.lit(`,"rule":` + jsonString(r.name))
		}
		if k.alwaysRetry() && len(r.violated) > 0 {
			b.lit(`,"violated-policies":[`)
			b.hole(segViolated)
			b.lit(`]`)
		}
		if r.limit != "" {
			b.lit(`,"limit":` + jsonString(r.limit))
		}
		b.ifRetry = true
		b.lit(`,"retry_after":`)
		b.hole(segRetrySeconds)
		b.ifRetry = false
		b.lit("}\n")
	case formatText:
		b.lit(status + " " + title + "\n\n")
		b.text(detail, func(s string, _ bool) string { return s })
		b.lit("\n")
		if retry != nil {
			b.ifRetry = true
			b.text(retry, func(s string, _ bool) string { return s })
			b.lit("\n")
			b.ifRetry = false
		}
	case formatHTML:
		esc := html.EscapeString
		b.lit("<!doctype html>\n<html lang=\"" + c.tag + "\">\n<head>\n" +
			"<meta charset=\"utf-8\">\n" +
			"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
			"<meta name=\"robots\" content=\"noindex\">\n" +
			"<title>" + esc(title) + " (" + status + ")</title>\n" +
			"<style>" + pageCSS + "</style>\n" +
			"</head>\n<body>\n<main>\n" +
			"<h1>" + esc(title) + "</h1>\n" +
			"<p role=\"alert\"")
		if detailLang != "" {
			b.lit(" lang=\"" + esc(detailLang) + "\"")
		}
		b.lit(">")
		b.text(detail, htmlWithLinks)
		b.lit("</p>\n")
		if retry != nil {
			b.ifRetry = true
			b.lit("<p>")
			b.text(retry, htmlWithLinks)
			b.lit("</p>\n")
			b.ifRetry = false
		}
		meta := esc(c.codeLabel) + ": " + status
		if r.name != "" {
			meta += " · " + esc(c.ruleLabel) + ": " + esc(r.name)
		}
		b.lit("<p class=\"meta\">" + meta + "</p>\n</main>\n</body>\n</html>\n")
	}
	return &template{segs: b.segs}
}

// pageCSS is the HTML page's only style: system fonts, a readable
// measure, and colours with a contrast ratio of at least 7:1 (WCAG AAA) in
// both light and dark schemes.
const pageCSS = ":root{color-scheme:light dark}" +
	"body{margin:0;padding:2rem 1rem;font:1.125rem/1.6 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:#1b1b1b;background:#fff}" +
	"main{max-width:36rem;margin:0 auto}" +
	"h1{font-size:1.75rem;line-height:1.25;margin:0 0 1rem}" +
	"a{color:#0645ad}" +
	".meta{font-size:1rem;color:#484848}" +
	"@media (prefers-color-scheme:dark){body{color:#eee;background:#111}a{color:#9cc3ff}.meta{color:#bbb}}"

// htmlCSP allows the page nothing but its own inline style, by hash.
var htmlCSP = func() string {
	sum := sha256.Sum256([]byte(pageCSS))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'"
}()

// jsonString returns s as a JSON string literal, quotes included.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// jsonFragment returns s escaped for use inside a JSON string literal.
func jsonFragment(s string) string {
	q := jsonString(s)
	return q[1 : len(q)-1]
}

// htmlWithLinks escapes s for HTML text and turns the http and https
// URLs in it into links, so that a rule message pointing to another
// resource ("use the bulk archive at https://…") can be followed. A URL
// running into a placeholder is left as text: its end is unknown.
func htmlWithLinks(s string, beforeHole bool) string {
	var b strings.Builder
	for {
		i := indexURL(s)
		if i < 0 {
			break
		}
		end := i
		for end < len(s) && !isURLStop(s[end]) {
			end++
		}
		u := strings.TrimRight(s[i:end], ".,;:!?)'")
		if (beforeHole && i+len(u) == len(s)) || !linkable(u) {
			b.WriteString(html.EscapeString(s[:i+len(u)]))
			s = s[i+len(u):]
			continue
		}
		e := html.EscapeString(u)
		b.WriteString(html.EscapeString(s[:i]))
		b.WriteString(`<a href="` + e + `">` + e + `</a>`)
		s = s[i+len(u):]
	}
	b.WriteString(html.EscapeString(s))
	return b.String()
}

// indexURL returns the index of the first "http://" or "https://" in s
// that starts a word, or -1.
func indexURL(s string) int {
	off := 0
	for {
		i := strings.Index(s[off:], "http")
		if i < 0 {
			return -1
		}
		i += off
		rest := s[i:]
		if (strings.HasPrefix(rest, "http://") || strings.HasPrefix(rest, "https://")) &&
			(i == 0 || !isWordByte(s[i-1])) {
			return i
		}
		off = i + 4
	}
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c >= 0x80
}

func isURLStop(c byte) bool {
	return c <= ' ' || c == '<' || c == '>' || c == '"' || c == '`' || c == 0x7f
}

func linkable(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}
