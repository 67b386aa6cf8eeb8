package logs

import (
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader for one-object-per-line logs: it walks an object's
// members and hands out raw value spans, decoding only the strings asked
// for, into a scratch buffer, so a line costs no allocation. It is lenient
// where that is harmless (it does not check everything a validator would)
// and never panics or recurses on hostile input.

// maxDepth bounds nesting inside skipped values.
const maxDepth = 512

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] ('"').
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		return stringEnd(b, i)
	case c == '{' || c == '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := stringEnd(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				if depth++; depth > maxDepth {
					return 0, false
				}
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	case c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'):
		j := i + 1
		for j < len(b) {
			c := b[j]
			if !(c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == 'E') {
				break
			}
			j++
		}
		return j, true
	}
	return 0, false
}

// object iterates the members of the JSON object starting at b[i].
type object struct {
	b     []byte
	i     int
	first bool
	bad   bool
}

func newObject(b []byte, i int) object {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return object{bad: true}
	}
	return object{b: b, i: i + 1, first: true}
}

// next returns the next member's raw key (without quotes, not unescaped)
// and raw value span. ok is false at the end of the object or on a
// syntax error (then o.bad is set).
func (o *object) next() (key, val []byte, ok bool) {
	if o.bad {
		return nil, nil, false
	}
	b := o.b
	i := skipSpace(b, o.i)
	if i < len(b) && b[i] == '}' {
		o.i = i + 1
		return nil, nil, false
	}
	if !o.first {
		if i >= len(b) || b[i] != ',' {
			o.bad = true
			return nil, nil, false
		}
		i = skipSpace(b, i+1)
	}
	o.first = false
	if i >= len(b) || b[i] != '"' {
		o.bad = true
		return nil, nil, false
	}
	kend, ok := stringEnd(b, i)
	if !ok {
		o.bad = true
		return nil, nil, false
	}
	key = b[i+1 : kend-1]
	i = skipSpace(b, kend)
	if i >= len(b) || b[i] != ':' {
		o.bad = true
		return nil, nil, false
	}
	i = skipSpace(b, i+1)
	vend, ok := skipValue(b, i)
	if !ok {
		o.bad = true
		return nil, nil, false
	}
	o.i = vend
	return key, b[i:vend], true
}

// end reports whether the object ended well and only space follows it.
func (o *object) end() bool {
	return !o.bad && skipSpace(o.b, o.i) == len(o.b)
}

// array iterates the elements of the JSON array v (a raw value span).
type array struct {
	b     []byte
	i     int
	first bool
	bad   bool
}

func newArray(v []byte) array {
	if len(v) < 2 || v[0] != '[' {
		return array{bad: true}
	}
	return array{b: v, i: 1, first: true}
}

func (a *array) next() (val []byte, ok bool) {
	if a.bad {
		return nil, false
	}
	b := a.b
	i := skipSpace(b, a.i)
	if i < len(b) && b[i] == ']' {
		a.i = i + 1
		return nil, false
	}
	if !a.first {
		if i >= len(b) || b[i] != ',' {
			a.bad = true
			return nil, false
		}
		i = skipSpace(b, i+1)
	}
	a.first = false
	end, ok := skipValue(b, i)
	if !ok {
		a.bad = true
		return nil, false
	}
	a.i = end
	return b[i:end], true
}

// scratch holds decoded strings of one line.
type scratch struct{ buf []byte }

// str decodes the raw JSON string v (with quotes); ok is false if v is
// not a string. A string without escapes is returned as it is, pointing
// into v.
func (s *scratch) str(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	v = v[1 : len(v)-1]
	esc := false
	for _, c := range v {
		if c == '\\' {
			esc = true
			break
		}
	}
	if !esc {
		return v, true
	}
	start := len(s.buf)
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c != '\\' {
			s.buf = append(s.buf, c)
			continue
		}
		i++
		if i >= len(v) {
			return nil, false
		}
		switch v[i] {
		case '"', '\\', '/':
			s.buf = append(s.buf, v[i])
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, n := hex4(v[i+1:])
			if n == 0 {
				return nil, false
			}
			i += n
			if utf16.IsSurrogate(r) {
				if i+2 < len(v) && v[i+1] == '\\' && v[i+2] == 'u' {
					if r2, n2 := hex4(v[i+3:]); n2 > 0 {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							r = d
							i += 2 + n2
						}
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			return nil, false
		}
	}
	return s.buf[start:len(s.buf):len(s.buf)], true
}

// hex4 decodes four hex digits; n is 4, or 0 on error.
func hex4(b []byte) (r rune, n int) {
	if len(b) < 4 {
		return 0, 0
	}
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, 0
		}
	}
	return r, 4
}

// jsonInt parses a JSON number that is an integer (a fraction is cut off:
// 1.5e3 is refused, 12.0 is 12).
func jsonInt(v []byte) (int64, bool) {
	neg := false
	if len(v) > 0 && v[0] == '-' {
		neg, v = true, v[1:]
	}
	if dot := indexByte(v, '.'); dot >= 0 {
		for _, c := range v[dot+1:] {
			if c < '0' || c > '9' {
				return 0, false
			}
		}
		v = v[:dot]
	}
	n, ok := bigDigits(v)
	if neg {
		n = -n
	}
	return n, ok
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}
