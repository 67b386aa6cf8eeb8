package respond

import (
	"strings"

	"github.com/floodgate/floodgate/internal/httpsyntax"
)

// maxNegotiateBytes bounds how much of Accept or Accept-Language is read:
// a client can send up to the server's header limit (1 MiB by default),
// and negotiation must stay cheap during a flood. Elements past the bound
// are ignored as if absent.
const maxNegotiateBytes = 4096

// A format is a body representation.
type format uint8

const (
	formatJSON format = iota // application/problem+json
	formatText               // text/plain
	formatHTML               // text/html
	numFormats
)

var formatNames = [numFormats]string{"json", "text", "html"}

// listScanner yields the elements of a comma-separated header list
// (RFC 9110 §5.6.1) across all of a field's lines, each as its first
// part (media range or language range) and its q parameter, in one pass
// over the bytes. Empty elements are skipped, a quoted parameter value
// may hold ',' or ';', and at most maxNegotiateBytes are read.
type listScanner struct {
	vals   []string
	cur    string
	budget int
}

func newListScanner(vals []string) listScanner {
	return listScanner{vals: vals, budget: maxNegotiateBytes}
}

// next returns the next element's range and weight in thousandths (1000
// without a q parameter). ok is false when the list is done; valid is
// false when the element's q parameter is malformed: callers ignore it.
func (s *listScanner) next() (rng string, q int, valid, ok bool) {
	for {
		cur := skipSeparators(s.cur)
		if cur == "" {
			if len(s.vals) == 0 || s.budget <= 0 {
				s.cur = ""
				return "", 0, false, false
			}
			v := s.vals[0]
			s.vals = s.vals[1:]
			if len(v) > s.budget {
				// Keep only whole elements.
				v = v[:s.budget]
				if i := strings.LastIndexByte(v, ','); i >= 0 {
					v = v[:i]
				} else {
					v = ""
				}
				s.budget = 0
			} else {
				s.budget -= len(v) + 1
			}
			s.cur = v
			continue
		}
		i := 0
		for i < len(cur) && cur[i] != ';' && cur[i] != ',' {
			i++
		}
		rng, cur = trimOWS(cur[:i]), cur[i:]
		q, valid = 1000, true
		for len(cur) > 0 && cur[0] == ';' {
			cur = skipOWS(cur[1:])
			i = 0
			for i < len(cur) && cur[i] != '=' && cur[i] != ';' && cur[i] != ',' {
				i++
			}
			name := trimOWS(cur[:i])
			cur = cur[i:]
			isQ := len(name) == 1 && name[0]|0x20 == 'q'
			if len(cur) == 0 || cur[0] != '=' {
				if isQ {
					valid = false
				}
				continue
			}
			cur = skipOWS(cur[1:])
			if len(cur) > 0 && cur[0] == '"' {
				cur = skipQuoted(cur)
				if isQ {
					valid = false // a qvalue is never quoted
				}
			}
			i = 0
			for i < len(cur) && cur[i] != ';' && cur[i] != ',' {
				i++
			}
			if isQ && valid {
				q, valid = parseQ(trimOWS(cur[:i]))
			}
			cur = cur[i:]
		}
		s.cur = cur
		if rng == "" && valid {
			continue
		}
		return rng, q, valid, true
	}
}

// skipQuoted returns s after the quoted string it starts with, or "" if
// the quoted string does not end.
func skipQuoted(s string) string {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return s[i+1:]
		}
	}
	return ""
}

func skipSeparators(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t' || s[0] == ',') {
		s = s[1:]
	}
	return s
}

func skipOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	return s
}

func trimOWS(s string) string {
	s = skipOWS(s)
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// parseQ parses an RFC 9110 §12.4.2 qvalue into thousandths:
// ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ).
func parseQ(s string) (int, bool) {
	if s == "" || len(s) > 5 || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	one := s[0] == '1'
	frac := s[1:]
	if frac != "" {
		if frac[0] != '.' {
			return 0, false
		}
		frac = frac[1:]
	}
	n := 0
	for i := 0; i < 3; i++ {
		d := 0
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' || (one && c != '0') {
				return 0, false
			}
			d = int(c - '0')
		}
		n = n*10 + d
	}
	if one {
		return 1000, true
	}
	return n, true
}

// equalFold reports whether s equals lower, a lower-case ASCII string,
// ignoring the case of ASCII letters only.
func equalFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c, l := s[i], lower[i]
		if c != l && !('a' <= l && l <= 'z' && c == l-('a'-'A')) {
			return false
		}
	}
	return true
}

// cut is strings.Cut for one byte, faster on the short strings here.
func cut(s string, sep byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Media-range specificity for one format, higher wins (RFC 9110 §12.5.1).
const (
	specNone  = iota
	specAny   // */*
	specType  // application/*, text/*
	specAlias // application/json for problem+json
	specExact // application/problem+json, text/html, text/plain
)

type formatScore struct {
	spec int
	q    int
}

// negotiateFormat picks the body format for an Accept field (all its
// lines). See the package documentation for the rules.
func negotiateFormat(accept []string) format {
	var score [numFormats]formatScore
	set := func(f format, spec, q int) {
		s := &score[f]
		if spec > s.spec {
			*s = formatScore{spec, q}
		} else if spec == s.spec && q > s.q {
			s.q = q
		}
	}
	sc := newListScanner(accept)
	for {
		mr, q, valid, ok := sc.next()
		if !ok {
			break
		}
		if !valid {
			continue
		}
		// Only known names match, so no further syntax check is needed.
		typ, sub, _ := cut(mr, '/')
		switch {
		case typ == "*":
			if sub == "*" {
				for f := range numFormats {
					set(f, specAny, q)
				}
			}
		case equalFold(typ, "application"):
			switch {
			case sub == "*":
				set(formatJSON, specType, q)
			case equalFold(sub, "problem+json"):
				set(formatJSON, specExact, q)
			case equalFold(sub, "json"):
				set(formatJSON, specAlias, q)
			}
		case equalFold(typ, "text"):
			switch {
			case sub == "*":
				set(formatText, specType, q)
				set(formatHTML, specType, q)
			case equalFold(sub, "plain"):
				set(formatText, specExact, q)
			case equalFold(sub, "html"):
				set(formatHTML, specExact, q)
			}
		}
	}
	best, bestScore := formatJSON, formatScore{}
	for f := range numFormats {
		s := score[f]
		if s.spec == specNone || s.q == 0 {
			continue
		}
		// application/json counts as exact when comparing formats.
		class, bestClass := min(s.spec, specAlias), min(bestScore.spec, specAlias)
		if s.q > bestScore.q || (s.q == bestScore.q && class > bestClass) {
			best, bestScore = f, s
		}
	}
	return best
}

// Language-range specificity for one language.
const (
	langSpecNone   = iota
	langSpecAny    // *
	langSpecPrefix // pt for pt-BR (a message's text): the range is broader
	langSpecTrunc  // es-MX for es
	langSpecExact  // es for es
)

type langScore struct {
	spec int
	q    int
	pos  int
}

// negotiateLanguage picks, among the languages in offered (a non-empty
// bit set of catalog indexes), the one an Accept-Language field (all its
// lines) prefers; def when none is acceptable and def is offered, else
// the first offered. See the package documentation for the rules.
func negotiateLanguage(acceptLanguage []string, offered uint8, def lang) lang {
	if offered == 0 {
		return def
	}
	var score [numLangs]langScore
	set := func(l lang, spec, q, pos int) {
		s := &score[l]
		if spec > s.spec || (spec == s.spec && q > s.q) {
			*s = langScore{spec, q, pos}
		}
	}
	sc := newListScanner(acceptLanguage)
	for pos := 0; ; pos++ {
		rng, q, valid, ok := sc.next()
		if !ok {
			break
		}
		if !valid {
			continue
		}
		if rng == "*" {
			for l := range lang(numLangs) {
				set(l, langSpecAny, q, pos)
			}
			continue
		}
		primary, rest, sub := cut(rng, '-')
		for l := range lang(numLangs) {
			if equalFold(primary, catalogs[l].tag) && isLanguageRange(primary, rest, sub) {
				if sub {
					set(l, langSpecTrunc, q, pos)
				} else {
					set(l, langSpecExact, q, pos)
				}
			}
		}
	}
	best, found := def, false
	var bs langScore
	for l := range lang(numLangs) {
		s := score[l]
		if offered&(1<<l) == 0 || s.spec == langSpecNone || s.q == 0 {
			continue
		}
		better := !found
		if found {
			switch {
			case s.q != bs.q:
				better = s.q > bs.q
			case (s.spec == langSpecAny) != (bs.spec == langSpecAny):
				better = bs.spec == langSpecAny
			case s.pos != bs.pos:
				better = s.pos < bs.pos
			default:
				better = l == def
			}
		}
		if better {
			best, bs, found = l, s, true
		}
	}
	if found {
		return best
	}
	if offered&(1<<def) != 0 {
		return def
	}
	for l := range lang(numLangs) {
		if offered&(1<<l) != 0 {
			return l
		}
	}
	return def
}

// isLanguageRange checks RFC 4647 §2.1 syntax: 1*8ALPHA *("-" 1*8alphanum),
// given the range cut at its first '-'.
func isLanguageRange(primary, rest string, hasRest bool) bool {
	if !isAlnum8(primary, true) {
		return false
	}
	if !hasRest {
		return true
	}
	for {
		sub, tail, more := cut(rest, '-')
		if !isAlnum8(sub, false) {
			return false
		}
		if !more {
			return true
		}
		rest = tail
	}
}

func isAlnum8(s string, alphaOnly bool) bool {
	if s == "" || len(s) > 8 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20 // ASCII lower case; digits are unchanged
		switch {
		case 'a' <= c && c <= 'z':
		case !alphaOnly && '0' <= s[i] && s[i] <= '9':
		default:
			return false
		}
	}
	return true
}

// choose picks what an answer with message m is written in, for an
// Accept-Language field (all its lines): the message's text (a slot, see
// Message.slots; 0, the catalog's detail, when m is nil) and the catalog
// language of its titles and other words.
//
// The text is the one Accept-Language prefers (see negotiateText); when
// none is acceptable, the one the default language def selects as a range
// (its untagged text, "en", "en-US"), else the untagged text or the first
// tag. Its titles are in the catalog language of the text's primary
// language (English for "en-US"), else, for a language the catalog lacks
// ("pt-BR"), the catalog language Accept-Language prefers, as without a
// message.
func (m *Message) choose(acceptLanguage []string, def lang) (slot int, l lang) {
	if m == nil {
		return 0, negotiateLanguage(acceptLanguage, allLangs, def)
	}
	slot, ok := m.negotiateText(acceptLanguage, def)
	if !ok {
		slot, ok = m.negotiateText(valLangs[def], def)
	}
	if !ok {
		slot = 1
		if m.hasAny {
			slot = 0
		}
	}
	switch {
	case slot == 0:
		return 0, def
	case m.texts[slot-1].cat != noLang:
		return slot, m.texts[slot-1].cat
	}
	return slot, negotiateLanguage(acceptLanguage, allLangs, def)
}

// negotiateText picks the slot of m's text that an Accept-Language field
// prefers, as negotiateLanguage picks a catalog language, with these
// differences. The untagged text is the default language def's, unless a
// text is tagged with def's tag. A range selects a text when it is the
// text's tag, begins with it ("en-US" for "en"), or the tag begins with
// it ("pt" for "pt-BR"), in that order of specificity, case aside. On a
// tie in q, a named text beats one matched only by "*", then the range
// listed first, then the more specific match, then the default language's
// text, then the first by tag. ok is false when none is acceptable.
func (m *Message) negotiateText(acceptLanguage []string, def lang) (slot int, ok bool) {
	n := m.slots()
	defTag := catalogs[def].tag
	untagged := m.hasAny
	for _, t := range m.texts {
		if httpsyntax.EqualFoldASCII(t.tag, defTag) {
			untagged = false // the tagged text says it
		}
	}
	tagOf := func(s int) string {
		if s == 0 {
			return defTag
		}
		return m.texts[s-1].tag
	}
	var score [maxMessageLanguages + 1]langScore
	set := func(s, spec, q, pos int) {
		sc := &score[s]
		if spec > sc.spec || (spec == sc.spec && q > sc.q) {
			*sc = langScore{spec, q, pos}
		}
	}
	sc := newListScanner(acceptLanguage)
	for pos := 0; ; pos++ {
		rng, q, valid, more := sc.next()
		if !more {
			break
		}
		if !valid {
			continue
		}
		if rng != "*" {
			if primary, rest, sub := cut(rng, '-'); !isLanguageRange(primary, rest, sub) {
				continue
			}
		}
		for s := range n {
			if s == 0 && !untagged {
				continue
			}
			if rng == "*" {
				set(s, langSpecAny, q, pos)
			} else if spec := matchTag(rng, tagOf(s)); spec != langSpecNone {
				set(s, spec, q, pos)
			}
		}
	}
	inDef := func(s int) bool { return s == 0 || m.texts[s-1].cat == def }
	best := -1
	var bs langScore
	for s := range n {
		sc := score[s]
		if sc.spec == langSpecNone || sc.q == 0 {
			continue
		}
		better := best < 0
		if !better {
			switch {
			case sc.q != bs.q:
				better = sc.q > bs.q
			case (sc.spec == langSpecAny) != (bs.spec == langSpecAny):
				better = bs.spec == langSpecAny
			case sc.pos != bs.pos:
				better = sc.pos < bs.pos
			case sc.spec != bs.spec:
				better = sc.spec > bs.spec
			default:
				better = inDef(s) && !inDef(best)
			}
		}
		if better {
			best, bs = s, sc
		}
	}
	return best, best >= 0
}

// matchTag returns how specifically language range rng selects tag:
// exactly, as a truncation of it ("en-US" for "en") or as a prefix of it
// ("pt" for "pt-BR"), all without regard to ASCII case; langSpecNone if
// it does not.
func matchTag(rng, tag string) int {
	switch {
	case len(rng) == len(tag):
		if httpsyntax.EqualFoldASCII(rng, tag) {
			return langSpecExact
		}
	case len(rng) > len(tag):
		if rng[len(tag)] == '-' && httpsyntax.EqualFoldASCII(rng[:len(tag)], tag) {
			return langSpecTrunc
		}
	default:
		if tag[len(rng)] == '-' && httpsyntax.EqualFoldASCII(tag[:len(rng)], rng) {
			return langSpecPrefix
		}
	}
	return langSpecNone
}
