package config

import (
	"errors"
	"strconv"
	"strings"
)

// Expand replaces variable references in s, as Load does in every scalar
// value of a configuration file:
//
//	${VAR}          the value of VAR; a problem if VAR is unset
//	${VAR:-default} the value of VAR, or default when VAR is unset or empty
//	$$              a literal $
//
// A $ followed by anything else is kept as it is, so regular expressions
// such as 'a$' need no escaping. A default is literal text up to the first
// "}": it cannot contain "}" or another reference. Substituted values are
// never expanded again, so a variable holding "${B}" yields "${B}". VAR is
// a letter or underscore followed by letters, digits and underscores.
//
// lookup reports a variable's value and whether it is set (os.LookupEnv in
// production); nil means no variable is set. Expand returns every problem
// in s, joined, and the text expanded as far as it could be. Error messages
// name variables but never contain their values.
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	out, _, msgs, _ := expand(s, lookup)
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		errs[i] = errors.New(m)
	}
	return out, errors.Join(errs...)
}

// expand is Expand returning whether s held any ${…} reference (so a
// scalar's type must be resolved again), the problems as messages, and
// the variables that are unset with no default.
func expand(s string, lookup func(string) (string, bool)) (out string, refs bool, msgs, missing []string) {
	if strings.IndexByte(s, '$') < 0 {
		return s, false, nil, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) || (s[i+1] != '$' && s[i+1] != '{') {
			b.WriteByte(c)
			i++
			continue
		}
		if s[i+1] == '$' {
			b.WriteByte('$')
			i += 2
			continue
		}
		// A reference: "${" at i.
		refs = true
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			msgs = append(msgs, "unterminated variable reference "+quoteExcerpt(s[i:])+` (missing "}")`)
			b.WriteString(s[i:])
			break
		}
		ref := s[i : i+end+1] // "${…}"
		i += end + 1
		body := ref[2 : len(ref)-1]
		name, def, hasDef, what, why := parseRef(body)
		if what != "" {
			msg := what + " variable reference " + quoteExcerpt(ref)
			if why != "" {
				msg += ": " + why
			}
			msgs = append(msgs, msg)
			b.WriteString(ref)
			continue
		}
		if v, ok := lookupVar(lookup, name); ok && (v != "" || !hasDef) {
			b.WriteString(v)
			continue
		}
		if hasDef {
			b.WriteString(def)
			continue
		}
		msgs = append(msgs, "environment variable "+name+" is not set, and "+quoteExcerpt(ref)+" has no default")
		missing = append(missing, name)
	}
	return b.String(), refs, msgs, missing
}

func lookupVar(lookup func(string) (string, bool), name string) (string, bool) {
	if lookup == nil {
		return "", false
	}
	return lookup(name)
}

// parseRef splits the inside of "${…}" into a variable name and default.
// When body is malformed, what says how ("empty", "malformed") and why
// explains.
func parseRef(body string) (name, def string, hasDef bool, what, why string) {
	n := 0
	for n < len(body) && isNameByte(body[n], n == 0) {
		n++
	}
	name, rest := body[:n], body[n:]
	switch {
	case body == "":
		return "", "", false, "empty", ""
	case name == "":
		return "", "", false, "malformed", "a name starts with a letter or _"
	case rest == "":
		return name, "", false, "", ""
	case strings.HasPrefix(rest, ":-"):
		def = rest[2:]
		if strings.Contains(def, "${") {
			return "", "", false, "nested", "a default is literal text"
		}
		return name, def, true, "", ""
	}
	return "", "", false, "malformed", `expected "}" or ":-" after ` + name
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || !first && '0' <= c && c <= '9'
}

// quoteExcerpt quotes s for a message, shortened if long.
func quoteExcerpt(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 { // don't split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
