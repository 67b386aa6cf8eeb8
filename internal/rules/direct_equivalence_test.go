package rules

import (
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
)

// plainCEL compiles src with cel-go alone: no direct evaluation, no
// regular-expression optimisation (matchesFactory and its prefilter), the
// reference semantics the direct subset must agree with.
func plainCEL(t testing.TB, env *cel.Env, src string) cel.Program {
	t.Helper()
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		t.Fatalf("%s: %v", src, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return prg
}

func plainEval(t testing.TB, prg cel.Program, req *Request) bool {
	t.Helper()
	out, _, err := prg.Eval(activation{req})
	if err != nil {
		t.Fatalf("cel-go: %v", err)
	}
	b, ok := out.Value().(bool)
	return ok && b
}

// TestMatchesReplacementChar: Go's regexp (and so cel-go's
// matches()) matches U+FFFD against a byte that is not valid UTF-8; the
// prefilter looks for the three bytes of U+FFFD's encoding and finds none,
// so a condition that holds under cel-go is false in floodgate, for the
// direct evaluation and the interpreter alike (both use newMatcher).
// request.path is percent-decoded ("/%FF" gives "/\xff") and User-Agent
// may carry obs-text, so a client chooses such bytes. (The prefilter is
// regex.go's, from before the direct evaluation; direct.go reuses it.)
func TestMatchesReplacementChar(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ src, path, ua string }{
		{`request.path.matches('\uFFFD')`, "/\xff", ""},
		{`request.path.matches('^/\uFFFD\uFFFD')`, "/\xe2\x82", ""},      // a truncated three-byte sequence: two invalid bytes
		{`matches(request.user_agent, '(?i)bot\uFFFD')`, "/", "BOT\xfe"}, // holds: a folded non-ASCII word gets no prefilter
		{`request.method == 'GET' && request.path.matches('/(a|\uFFFD)\uFFFD')`, "/a\xff", ""},
	} {
		c, err := newCondition(env, tc.src, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if c.direct == nil {
			t.Fatalf("%s: not in the direct subset", tc.src)
		}
		h := httptest.NewRequest("GET", "/", nil)
		h.Header.Set("User-Agent", tc.ua)
		req := &Request{HTTP: h, Path: tc.path}
		want := plainEval(t, plainCEL(t, env, tc.src), req)
		if !want {
			t.Errorf("%s on %q: cel-go says false; the case is wrong", tc.src, tc.path)
			continue
		}
		if got := c.direct(req); got != want {
			t.Errorf("%s on path %q, user agent %q: direct %v, cel-go %v", tc.src, tc.path, tc.ua, got, want)
		}
		if got, err := c.eval(req); got != want || err != nil {
			t.Errorf("%s on path %q, user agent %q: eval %v (%v), cel-go %v", tc.src, tc.path, tc.ua, got, err, want)
		}
	}
}

// FuzzDirectVsCEL: the direct evaluation against cel-go's own
// (no regex optimisation), on conditions from the generator of
// direct_test.go joined with a matches() of the fuzzer's pattern.
func FuzzDirectVsCEL(f *testing.F) {
	f.Add([]byte{3, 0, 0, 0}, "a", "GET", "/\xff", "a\xfeb", "api", "198.51.100.7")
	f.Add([]byte{14, 2, 2, 2}, "(?i)(gpt|cc)bot", "get", "/x/SCORES", "GPTBOT", "", "::1")
	env, err := NewEnv()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, prog []byte, pattern, method, path, ua, group, ip string) {
		g := &gen{b: prog}
		src := g.expr(0)
		if _, err := regexp.Compile(pattern); err == nil && utf8.ValidString(pattern) {
			src = "(" + src + ") != " + g.pick(genStrings) + ".matches(" + strconv.Quote(pattern) + ")"
		}
		c, err := newCondition(env, src, nil)
		if err != nil || c.direct == nil {
			return
		}
		req := fuzzRequest(method, path, ua, group, ip)
		if got, want := c.direct(req), plainEval(t, plainCEL(t, env, src), req); got != want {
			t.Fatalf("%s on method %q path %q ua %q group %q: direct %v, cel-go %v", src, method, path, ua, group, got, want)
		}
	})
}
