package respond

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxMessageBytes bounds one language's message text.
const maxMessageBytes = 4096

// A placeholder is a value substituted into a message.
type placeholder uint8

const (
	phNone       placeholder = iota
	phRule                   // {rule}: the rule's name
	phLimit                  // {limit}: the rule's limit that refused, e.g. "100/5m"
	phRetryAfter             // {retry_after}: Retry-After in seconds
	phRetryHuman             // {retry_after_human}: Retry-After in words
	numPlaceholders
)

var placeholderNames = [numPlaceholders]string{
	phRule:       "rule",
	phLimit:      "limit",
	phRetryAfter: "retry_after",
	phRetryHuman: "retry_after_human",
}

const allowedPlaceholders = "{rule}, {limit}, {retry_after}, {retry_after_human}"

// A part is a literal (ph == phNone) or a placeholder.
type part struct {
	lit string
	ph  placeholder
}

// A Message is a rule's own text for its answers, compiled by
// CompileMessage. It replaces the catalog's detail: it becomes the
// problem's "detail" member, the HTML page's alert paragraph and the
// plain-text body. A Message is immutable and safe for concurrent use.
type Message struct {
	// texts are the tagged texts, sorted by tag.
	texts  []text
	any    []part // the "" entry: the text for the default language
	hasAny bool
}

// A text is a message's text in one language.
type text struct {
	// tag is the language tag, in the conventional case ("pt-BR").
	tag   string
	parts []part
	// cat is the catalog language of the same primary language ("en"
	// for "en-US"), or noLang.
	cat lang
	// contentLanguage is the Content-Language of an answer with this
	// text whose titles are in catalog language l: the tag, then l's
	// when l is another language ("pt-BR, en").
	contentLanguage [numLangs][]string
}

// maxMessageLanguages bounds the languages of one message, so that
// choosing among them stays cheap during a flood.
const maxMessageLanguages = 32

// CompileMessage compiles a rule's message: a map from language tag to
// text. A tag is any BCP 47 language tag ("en", "es", "pt-BR",
// "zh-Hant"), in any case; the empty tag holds a text in the Writer's
// default language (the configuration's single-string form). The
// catalog's own texts (titles, the retry sentence) stay in its languages,
// Languages; see the package documentation for how an answer's language
// is chosen. A text may use the placeholders {rule}, {limit},
// {retry_after} (seconds) and {retry_after_human} (such as "5 minutes"),
// the last only in a catalog language, which it is written in; "{{" and
// "}}" stand for literal braces.
//
// An empty or nil map compiles to a nil *Message: the catalog's text. The
// error lists every problem found, one line each, each about one text a
// *MessageError: malformed or repeated tags, unknown placeholders,
// unbalanced braces, empty or oversized texts, invalid UTF-8 and control
// characters other than tab and newline; and more than 32 languages.
func CompileMessage(texts map[string]string) (*Message, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	var errs []error
	tagged := len(texts)
	if _, ok := texts[""]; ok {
		tagged--
	}
	if tagged > maxMessageLanguages {
		errs = append(errs, fmt.Errorf("%d languages, more than the %d a message may have", tagged, maxMessageLanguages))
	}
	m := new(Message)
	seen := map[string]string{} // lower-case tag → tag as given
	for _, tag := range slices.Sorted(maps.Keys(texts)) {
		bad := func(err error) { errs = append(errs, &MessageError{Tag: tag, Err: err}) }
		parts, err := parseMessage(texts[tag])
		for _, e := range leaves(err) {
			bad(e)
		}
		if tag == "" {
			m.any, m.hasAny = parts, true
			continue
		}
		if !isLanguageTag(tag) {
			bad(fmt.Errorf("%q is not a language tag such as en, es or pt-BR", tag))
			continue
		}
		if other, dup := seen[strings.ToLower(tag)]; dup {
			bad(fmt.Errorf("%q is the language of %q too", tag, other))
			continue
		}
		seen[strings.ToLower(tag)] = tag
		t := text{tag: canonicalTag(tag), parts: parts, cat: catalogOf(tag)}
		if t.cat == noLang && partsUse(parts, phRetryHuman) {
			bad(fmt.Errorf("{retry_after_human} is written in %s only, the answers' own languages: use {retry_after} (seconds) in a %s text", strings.Join(Languages(), " or "), t.tag))
		}
		for l := range lang(numLangs) {
			cl := t.tag
			if t.cat != l {
				cl += ", " + catalogs[l].tag
			}
			t.contentLanguage[l] = []string{cl}
		}
		m.texts = append(m.texts, t)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(m.texts, func(a, b text) int { return strings.Compare(a.tag, b.tag) })
	return m, nil
}

// isLanguageTag checks the form of a message's language tag: a primary
// language of 2 or 3 letters, then subtags of 1 to 8 letters and digits
// ("en", "pt-BR", "zh-Hant-TW", "es-419").
func isLanguageTag(tag string) bool {
	primary, rest, more := cut(tag, '-')
	if len(primary) < 2 || len(primary) > 3 || !isAlnum8(primary, true) {
		return false
	}
	return !more || isLanguageRange(primary, rest, true)
}

// canonicalTag writes tag in the case BCP 47 recommends (RFC 5646
// §2.1.1): the language in lower case, a script in title case ("Hant"),
// a region in upper case ("BR"), the rest, and everything after a
// one-letter subtag, in lower case.
func canonicalTag(tag string) string {
	b := []byte(strings.ToLower(tag))
	singleton := false
	for i, sub := 0, 0; i <= len(b); i++ {
		if i < len(b) && b[i] != '-' {
			continue
		}
		n := i - sub
		switch {
		case sub == 0 || singleton:
		case n == 1:
			singleton = true
		case n == 2 && isAlnum8(string(b[sub:i]), true):
			b[sub], b[sub+1] = b[sub]-('a'-'A'), b[sub+1]-('a'-'A')
		case n == 4 && isAlnum8(string(b[sub:i]), true):
			b[sub] -= 'a' - 'A'
		}
		sub = i + 1
	}
	return string(b)
}

// catalogOf returns the catalog language of tag's primary language, or
// noLang.
func catalogOf(tag string) lang {
	primary, _, _ := cut(tag, '-')
	for l := range lang(numLangs) {
		if equalFold(primary, catalogs[l].tag) {
			return l
		}
	}
	return noLang
}

// A MessageError is one problem with one of a message's texts, so that
// a caller can say where it is (a configuration names the text's field).
type MessageError struct {
	// Tag is the text's language tag as given (the key of
	// CompileMessage's map); "" for the text of the default language.
	Tag string
	// Err is the problem, one line.
	Err error
}

// Error returns "message[TAG]: problem", or "message: problem" for the
// untagged text.
func (e *MessageError) Error() string {
	if e.Tag == "" {
		return "message: " + e.Err.Error()
	}
	return "message[" + e.Tag + "]: " + e.Err.Error()
}

func (e *MessageError) Unwrap() error { return e.Err }

// leaves returns the errors err joins (errors.Join), recursively, or err
// alone; none for nil.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}

// Languages returns the tags the message was given for, sorted, in the
// conventional case ("pt-BR"); "" stands for the default language.
func (m *Message) Languages() []string {
	if m == nil {
		return nil
	}
	var tags []string
	if m.hasAny {
		tags = append(tags, "")
	}
	for _, t := range m.texts {
		tags = append(tags, t.tag)
	}
	return tags
}

// uses reports whether any of the message's texts uses ph.
func (m *Message) uses(ph placeholder) bool {
	if m == nil {
		return false
	}
	for _, t := range m.texts {
		if partsUse(t.parts, ph) {
			return true
		}
	}
	return partsUse(m.any, ph)
}

// slots is the number of texts an answer may be given with: the
// untagged text or the catalog's detail (slot 0), then each tagged text.
func (m *Message) slots() int {
	if m == nil {
		return 1
	}
	return 1 + len(m.texts)
}

// text returns the parts of slot s (see slots) and the tag of its
// language, "" when it is the catalog's language; nil parts for the
// catalog's detail.
func (m *Message) text(s int) ([]part, string) {
	switch {
	case m == nil:
		return nil, ""
	case s == 0:
		return m.any, ""
	}
	return m.texts[s-1].parts, m.texts[s-1].tag
}

// contentLanguage returns the Content-Language of an answer with slot s
// and catalog language l.
func (m *Message) contentLanguage(s int, l lang) []string {
	if m == nil || s == 0 {
		return valLangs[l]
	}
	return m.texts[s-1].contentLanguage[l]
}

func partsUse(parts []part, ph placeholder) bool {
	for _, p := range parts {
		if p.ph == ph {
			return true
		}
	}
	return false
}

// parseMessage splits s into literals and placeholders, reporting every
// problem.
func parseMessage(s string) ([]part, error) {
	var errs []error
	switch {
	case strings.TrimSpace(s) == "":
		return nil, errors.New("empty text")
	case len(s) > maxMessageBytes:
		errs = append(errs, fmt.Errorf("text is %d bytes, more than the %d allowed", len(s), maxMessageBytes))
	case !utf8.ValidString(s):
		return nil, errors.New("text is not valid UTF-8")
	}
	for i, r := range s {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029') {
			errs = append(errs, fmt.Errorf("control character %U at byte %d", r, i))
			break
		}
	}
	var parts []part
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '{' && strings.HasPrefix(s[i:], "{{"):
			lit.WriteByte('{')
			i += 2
		case c == '{':
			j := strings.IndexAny(s[i+1:], "{}")
			if j < 0 || s[i+1+j] == '{' {
				errs = append(errs, fmt.Errorf("unclosed '{' at byte %d (write {{ for a literal brace)", i))
				lit.WriteByte('{')
				i++
				continue
			}
			name := s[i+1 : i+1+j]
			idx := slices.Index(placeholderNames[:], name)
			if idx <= int(phNone) {
				if len(name) > 40 {
					name = name[:40] + "…"
				}
				errs = append(errs, fmt.Errorf("unknown placeholder {%s} at byte %d (allowed: %s)", name, i, allowedPlaceholders))
			} else {
				flush()
				parts = append(parts, part{ph: placeholder(idx)})
			}
			i += j + 2
		case c == '}' && strings.HasPrefix(s[i:], "}}"):
			lit.WriteByte('}')
			i += 2
		case c == '}':
			errs = append(errs, fmt.Errorf("unmatched '}' at byte %d (write }} for a literal brace)", i))
			i++
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return parts, nil
}

// mustParse compiles catalog text, which the tests check.
func mustParse(s string) []part {
	p, err := parseMessage(s)
	if err != nil {
		panic("respond: catalog text " + fmt.Sprintf("%q: %v", s, err))
	}
	return p
}
