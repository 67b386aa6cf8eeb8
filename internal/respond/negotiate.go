package respond

import "strings"

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
// (RFC 9110 §5.6.1) across all of a field's lines, skipping empty
// elements and never splitting inside a quoted string. It reads at most
// maxNegotiateBytes.
type listScanner struct {
	vals   []string
	cur    string
	quoted bool // cur holds a '"'
	budget int
}

func newListScanner(vals []string) listScanner {
	return listScanner{vals: vals, budget: maxNegotiateBytes}
}

func (s *listScanner) next() (string, bool) {
	for {
		if s.cur == "" {
			if len(s.vals) == 0 || s.budget <= 0 {
				return "", false
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
			s.quoted = strings.IndexByte(v, '"') >= 0
			continue
		}
		var i int
		if s.quoted {
			i = indexUnquoted(s.cur, ',')
		} else {
			i = strings.IndexByte(s.cur, ',')
		}
		var e string
		if i < 0 {
			e, s.cur = s.cur, ""
		} else {
			e, s.cur = s.cur[:i], s.cur[i+1:]
		}
		if e = trimOWS(e); e != "" {
			return e, true
		}
	}
}

// indexUnquoted returns the index of the first c in s outside a quoted
// string, or -1.
func indexUnquoted(s string, c byte) int {
	i := strings.IndexByte(s, c)
	q := strings.IndexByte(s, '"')
	if q < 0 || (i >= 0 && i < q) {
		return i // the common case: no quoted string before c
	}
	quoted := false
	for i := q; i < len(s); i++ {
		switch b := s[i]; {
		case quoted && b == '\\':
			i++
		case b == '"':
			quoted = !quoted
		case !quoted && b == c:
			return i
		}
	}
	return -1
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// weight returns the q parameter among params (the text after an
// element's first ';'), in thousandths; 1000 when there is none. ok is
// false when a q parameter is malformed: the element is then ignored.
func weight(params string) (q int, ok bool) {
	q = 1000
	for params != "" {
		var p string
		if i := indexUnquoted(params, ';'); i >= 0 {
			p, params = params[:i], params[i+1:]
		} else {
			p, params = params, ""
		}
		name, value, _ := strings.Cut(trimOWS(p), "=")
		if !strings.EqualFold(trimOWS(name), "q") {
			continue
		}
		if q, ok = parseQ(trimOWS(value)); !ok {
			return 0, false
		}
	}
	return q, true
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

// isToken reports whether s is a non-empty RFC 9110 token.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tchar[s[i]] {
			return false
		}
	}
	return true
}

var tchar = func() (t [256]bool) {
	for c := '0'; c <= 'z'; c++ {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

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
		e, ok := sc.next()
		if !ok {
			break
		}
		mr, params, _ := strings.Cut(e, ";")
		q, ok := weight(params)
		if !ok {
			continue
		}
		typ, sub, ok := strings.Cut(trimOWS(mr), "/")
		if !ok || !isToken(typ) || !isToken(sub) {
			continue
		}
		switch {
		case typ == "*":
			if sub == "*" {
				for f := range numFormats {
					set(f, specAny, q)
				}
			}
		case strings.EqualFold(typ, "application"):
			switch {
			case sub == "*":
				set(formatJSON, specType, q)
			case strings.EqualFold(sub, "problem+json"):
				set(formatJSON, specExact, q)
			case strings.EqualFold(sub, "json"):
				set(formatJSON, specAlias, q)
			}
		case strings.EqualFold(typ, "text"):
			switch {
			case sub == "*":
				set(formatText, specType, q)
				set(formatHTML, specType, q)
			case strings.EqualFold(sub, "plain"):
				set(formatText, specExact, q)
			case strings.EqualFold(sub, "html"):
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

// Language-range specificity for one catalog language.
const (
	langSpecNone  = iota
	langSpecAny   // *
	langSpecTrunc // es-MX for es
	langSpecExact // es for es
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
		e, ok := sc.next()
		if !ok {
			break
		}
		rng, params, _ := strings.Cut(e, ";")
		q, ok := weight(params)
		if !ok {
			continue
		}
		rng = trimOWS(rng)
		if rng == "*" {
			for l := range lang(numLangs) {
				set(l, langSpecAny, q, pos)
			}
			continue
		}
		primary, rest, sub := strings.Cut(rng, "-")
		if !isLanguageRange(primary, rest, sub) {
			continue
		}
		for l := range lang(numLangs) {
			if strings.EqualFold(primary, catalogs[l].tag) {
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
		sub, tail, more := strings.Cut(rest, "-")
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
