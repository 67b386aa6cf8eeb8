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
	byLang [numLangs][]part
	has    uint8  // bit l set when byLang[l] was given
	any    []part // the "" entry: the text for the default language
	hasAny bool
}

// CompileMessage compiles a rule's message: a map from language tag to
// text. The tags are those of Languages ("en", "es"); the empty tag holds
// a text in the Writer's default language (the configuration's
// single-string form). A text may use the placeholders {rule}, {limit},
// {retry_after} (seconds) and {retry_after_human} (such as "5 minutes",
// in the answer's language); "{{" and "}}" stand for literal braces.
//
// An empty or nil map compiles to a nil *Message: the catalog's text. The
// error lists every problem found, each a *MessageError of its own (one
// line): unknown tags and placeholders, unbalanced braces, empty or
// oversized texts, invalid UTF-8 and control characters other than tab
// and newline.
func CompileMessage(texts map[string]string) (*Message, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	var errs []error
	m := new(Message)
	for _, tag := range slices.Sorted(maps.Keys(texts)) {
		parts, err := parseMessage(texts[tag])
		for _, e := range leaves(err) {
			errs = append(errs, &MessageError{Tag: tag, Err: e})
		}
		if tag == "" {
			m.any, m.hasAny = parts, true
			continue
		}
		l, ok := langByTag(tag)
		if !ok {
			errs = append(errs, &MessageError{Tag: tag, Err: fmt.Errorf("unsupported language %q (supported: %s, or no tag for the default language)", tag, strings.Join(Languages(), ", "))})
			continue
		}
		m.byLang[l] = parts
		m.has |= 1 << l
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return m, nil
}

// A MessageError is one problem with one of a message's texts, so that
// a caller can say where it is (a configuration names the text's field).
type MessageError struct {
	// Tag is the text's language tag as given; "" for the text of the
	// default language.
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

// Languages returns the tags the message was given for, sorted; "" stands
// for the default language.
func (m *Message) Languages() []string {
	if m == nil {
		return nil
	}
	var tags []string
	if m.hasAny {
		tags = append(tags, "")
	}
	for l := range lang(numLangs) {
		if m.has&(1<<l) != 0 {
			tags = append(tags, catalogs[l].tag)
		}
	}
	return tags
}

// uses reports whether any of the message's texts uses ph.
func (m *Message) uses(ph placeholder) bool {
	if m == nil {
		return false
	}
	for _, t := range m.byLang {
		if partsUse(t, ph) {
			return true
		}
	}
	return partsUse(m.any, ph)
}

// text returns the message's parts for language l: its own, else the
// default-language text.
func (m *Message) text(l lang) []part {
	if m.has&(1<<l) != 0 {
		return m.byLang[l]
	}
	return m.any
}

// offered returns the bit set of languages an answer with this message
// can be given in.
func (m *Message) offered(def lang) uint8 {
	if m == nil {
		return 1<<numLangs - 1
	}
	o := m.has
	if m.hasAny {
		o |= 1 << def
	}
	return o
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
