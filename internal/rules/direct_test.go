package rules

import (
	"crypto/tls"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/floodgate/floodgate/internal/config"
)

// directCases are conditions and whether they are evaluated without the
// interpreter.
var directCases = []struct {
	src    string
	direct bool
}{
	{"true", true},
	{"false", true},
	{"session.valid", true},
	{"!session.valid", true},
	{"client.internal || session.present", true},
	{"session.valid == true", true},
	{"false != session.present", true},
	{"request.method == 'GET'", true},
	{"'GET' == request.method", true},
	{"request.method != 'OPTIONS'", true},
	{"route.group == 'api' || (route.group == 'pages' && request.method == 'GET')", true},
	{"route.group == 'api' && !session.valid", true},
	{"request.path.startsWith('/api/')", true},
	{"request.path.endsWith('.csv')", true},
	{"request.user_agent.contains('bot')", true},
	{"request.path.matches('/(scores|counts|variants/data|mapped-variants)/?$')", true},
	{"matches(request.user_agent, '(?i)(GPTBot|CCBot)')", true},
	{"request.method != 'OPTIONS' && request.path.matches('/(scores|counts)/?$')", true},
	{"request.method in ['POST', 'PUT', 'PATCH']", true},
	{"request.method in []", true},
	{"request.host == request.host", true},
	{"request.scheme == 'https'", true},
	{"client.ip == '198.51.100.7'", true},
	{"api_client.id == '' && api_client.plan != 'free'", true},
	{"route.name == 'search' || route.name == 'detail' || route.name == 'related' || route.name == 'stats' || route.name == 'oembed'", true},
	{"!(!(request.method == 'GET'))", true},
	{"request.path.matches('(?i)\\\\.CSV$')", true},
	{"request.path == '/caf\u00e9'", true},
	// Outside the subset: the interpreter evaluates them.
	{"request.headers['x-api-key'] == 'k'", false},
	{"'x-api-key' in request.headers", false},
	{"request.query['format'] == 'csv'", false},
	{"size(request.path) > 100", false},
	{"request.path.matches('/a') == true", false},
	{"request.method in ['GET', request.host]", false},
	{"request.path.startsWith(request.host)", false},
	{"request.method < 'Z'", false},
	{"request.method == 'GET' ? session.valid : true", false},
	{"[request.method].exists(m, m == 'GET')", false},
	{"request.path + '/' == '//'", false},
	{"true && request.headers['a'] == 'b'", false},
}

// directRequests is a corpus of requests the cases are evaluated on.
func directRequests() []*Request {
	var out []*Request
	for _, r := range []struct {
		method, target, host, ua, route, group, client, plan string
		ip                                                   string
		tls, internal, present, valid                        bool
	}{
		{"GET", "/api/v1/score-sets/urn:mavedb:00000001-a-1", "api.example.org", "curl/8.5", "api", "api", "", "", "198.51.100.7", false, false, false, false},
		{"HEAD", "/export/all.csv", "example.org", "Wget", "export", "bulk", "", "", "192.0.2.1", false, false, true, false},
		{"GET", "/api/v1/score-sets/urn:mavedb:1/scores", "api.example.org:8443", "Mozilla/5.0 (compatible; GPTBot/1.0)", "csv-scores", "bulk", "", "", "2001:db8::1", true, false, true, false},
		{"OPTIONS", "/api/v1/score-sets/urn:mavedb:1/counts/", "", "", "csv-counts", "bulk", "", "", "", false, true, false, false},
		{"POST", "/data/FILE.CSV", "Example.org", "ccbot", "search", "api", "openverse.org", "frontend", "198.51.100.7", false, false, true, true},
		{"PATCH", "/caf%C3%A9", "[::1]:80", "bot bot", "pages", "pages", "x", "free", "203.0.113.9", true, true, true, true},
		{"get", "/", "h", "\xff\xfe", "", "", "", "", "", false, false, false, true},
	} {
		h := httptest.NewRequest("GET", "http://example.org"+r.target, nil)
		h.Method, h.Host = r.method, r.host
		if r.ua != "" {
			h.Header.Set("User-Agent", r.ua)
		}
		if r.tls {
			h.TLS = &tls.ConnectionState{}
		}
		req := &Request{HTTP: h, Path: h.URL.Path, Route: r.route, RouteGroup: r.group,
			Internal: r.internal, SessionPresent: r.present, SessionValid: r.valid,
			APIClient: r.client, APIClientPlan: r.plan}
		if r.ip != "" {
			req.ClientIP = netip.MustParseAddr(r.ip)
		}
		out = append(out, req)
	}
	return out
}

// interpreted evaluates c with CEL's interpreter alone.
func interpreted(t testing.TB, c *condition, req *Request) bool {
	t.Helper()
	return plainEval(t, c.prg, req)
}

func TestDirectConditions(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	reqs := directRequests()
	for _, tc := range directCases {
		c, err := newCondition(env, tc.src, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if got := c.direct != nil; got != tc.direct {
			t.Errorf("%s: direct %v, want %v", tc.src, got, tc.direct)
		}
		if c.direct == nil {
			continue
		}
		holds := 0
		for i, req := range reqs {
			want := interpreted(t, c, req)
			if got := c.direct(req); got != want {
				t.Errorf("%s on request %d: direct %v, interpreter %v", tc.src, i, got, want)
			}
			if got, err := c.eval(req); got != want || err != nil {
				t.Errorf("%s on request %d: eval %v, %v; want %v", tc.src, i, got, err, want)
			}
			if want {
				holds++
			}
		}
		t.Logf("%s: holds for %d of %d requests", tc.src, holds, len(reqs))
	}
}

// TestDirectCorpusSeparates keeps the corpus able to catch a wrong
// evaluation: every condition of the subset other than a constant must
// hold for some request and fail for another.
func TestDirectCorpusSeparates(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	reqs := directRequests()
	for _, tc := range directCases {
		if !tc.direct || tc.src == "true" || tc.src == "false" || tc.src == "request.method in []" ||
			tc.src == "request.host == request.host" {
			continue
		}
		c, err := newCondition(env, tc.src, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[bool]bool{}
		for _, req := range reqs {
			seen[c.direct(req)] = true
		}
		if !seen[true] || !seen[false] {
			t.Errorf("%s: the corpus only gives %v", tc.src, seen)
		}
	}
}

// TestExampleConditionsAreDirect: every condition in the example
// configurations is in the direct subset (the benchmarks measure it).
func TestExampleConditionsAreDirect(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"../../examples/mavedb.yaml", "../../examples/openverse.yaml"} {
		// Every variable set: only the rules are read.
		f, err := config.Load(file, "", func(string) (string, bool) { return "placeholder", true })
		if err != nil {
			t.Fatal(err)
		}
		srcs := []string{f.Config.Sessions.IssueWhen}
		for _, r := range f.Config.Rules {
			srcs = append(srcs, r.When)
		}
		n := 0
		for _, src := range srcs {
			if w := strings.TrimSpace(src); w == "" || w == "true" {
				continue
			}
			c, err := newCondition(env, src, nil)
			if err != nil {
				t.Fatalf("%s: %s: %v", file, src, err)
			}
			if c.direct == nil {
				t.Errorf("%s: %q is evaluated by the interpreter", file, src)
			}
			n++
		}
		if n == 0 {
			t.Errorf("%s: no conditions found", file)
		}
	}
}

// FuzzDirectCondition builds conditions of the subset (and some outside
// it) from the fuzzer's bytes and checks the direct evaluation against
// the interpreter on requests made of the fuzzer's strings.
func FuzzDirectCondition(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, "GET", "/api/x/scores", "GPTBot", "api", "198.51.100.7")
	f.Add([]byte{9, 9, 4, 7, 1, 200, 13}, "OPTIONS", "/a.CSV", "", "", "")
	f.Add([]byte{5, 6, 7, 8, 10, 11, 12, 14, 15}, "get", "/\xff", "a\x00b", "pages", "::1")
	env, err := NewEnv()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, prog []byte, method, path, ua, group, ip string) {
		g := &gen{b: prog}
		src := g.expr(0)
		c, err := newCondition(env, src, nil)
		if err != nil {
			return // e.g. a literal the generator quoted into something CEL refuses
		}
		req := fuzzRequest(method, path, ua, group, ip)
		want := interpreted(t, c, req)
		if c.direct == nil {
			return
		}
		if got := c.direct(req); got != want {
			t.Fatalf("%s: direct %v, interpreter %v", src, got, want)
		}
	})
}

// fuzzRequest makes a request of the fuzzer's strings.
func fuzzRequest(method, path, ua, group, ip string) *Request {
	h := httptest.NewRequest("GET", "/", nil)
	h.Method, h.Host = method, group
	h.Header.Set("User-Agent", ua)
	req := &Request{HTTP: h, Path: path, Route: ua, RouteGroup: group,
		SessionValid: len(path)%2 == 0, SessionPresent: len(ua)%2 == 0, Internal: len(method)%2 == 0}
	req.ClientIP, _ = netip.ParseAddr(ip)
	return req
}

// gen writes a CEL condition from bytes.
type gen struct {
	b []byte
	i int
}

func (g *gen) next() int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1])
}

var (
	genStrings = []string{"request.method", "request.path", "request.host", "request.scheme", "request.user_agent",
		"route.name", "route.group", "client.ip", "api_client.id", "api_client.plan"}
	genBools    = []string{"client.internal", "session.present", "session.valid"}
	genLiterals = []string{"'GET'", "'OPTIONS'", "''", "'/api/'", "'scores'", "'bot'", "'a\\x00b'", "'\\xff'",
		"'198.51.100.7'", "'api'", "'pages'", "'/'", "'http'", "'https'", "'caf\u00e9'"}
	genPatterns = []string{"'/(scores|counts)/?$'", "'(?i)(gptbot|ccbot)'", "'^/api/'", "'.'", "'^$'", "'\\\\.csv$'", "'(?i)\\\\.CSV$'"}
)

func (g *gen) pick(list []string) string { return list[g.next()%len(list)] }

func (g *gen) expr(depth int) string {
	op := g.next() % 16
	if depth > 4 {
		op %= 8
	}
	s, lit := g.pick(genStrings), g.pick(genLiterals)
	switch op {
	case 0:
		return s + " == " + lit
	case 1:
		return lit + " != " + s
	case 2:
		return s + "." + g.pick([]string{"startsWith", "endsWith", "contains"}) + "(" + lit + ")"
	case 3:
		return s + ".matches(" + g.pick(genPatterns) + ")"
	case 4:
		return g.pick(genBools)
	case 5:
		return s + " in [" + lit + ", " + g.pick(genLiterals) + "]"
	case 6:
		return g.pick(genBools) + " == " + g.pick([]string{"true", "false"})
	case 7:
		return s + " == " + g.pick(genStrings)
	case 8, 9:
		return "(" + g.expr(depth+1) + " && " + g.expr(depth+1) + ")"
	case 10, 11:
		return "(" + g.expr(depth+1) + " || " + g.expr(depth+1) + ")"
	case 12:
		return "!(" + g.expr(depth+1) + ")"
	case 13:
		return "size(" + s + ") > 3" // outside the subset
	case 14:
		return "matches(" + s + ", " + g.pick(genPatterns) + ")"
	}
	return g.pick([]string{"true", "false"})
}

// TestDirectGenerator runs the fuzz target's generator over a grid of
// programs, so that each production is checked on every go test.
func TestDirectGenerator(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	reqs := directRequests()
	direct, interp := 0, 0
	for a := 0; a < 256; a += 3 {
		for b := 0; b < 256; b += 5 {
			g := &gen{b: []byte{byte(a), byte(b), byte(a ^ b), byte(a + b), byte(a * 7), byte(b * 3), byte(a + 1), byte(b + 2)}}
			src := g.expr(0)
			c, err := newCondition(env, src, nil)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if c.direct == nil {
				interp++
				continue
			}
			direct++
			for i, req := range reqs {
				if got, want := c.direct(req), interpreted(t, c, req); got != want {
					t.Fatalf("%s on request %d: direct %v, interpreter %v", src, i, got, want)
				}
			}
		}
	}
	if direct == 0 || interp == 0 {
		t.Errorf("generator made %d direct and %d interpreted conditions, want both", direct, interp)
	}
	t.Logf("%d direct, %d interpreted conditions checked", direct, interp)
}

// TestEveryVariableResolves: the request model's table (variables, for
// the CEL environment and the docs) and the functions that read the
// variables (stringVars, boolVars, the activation) name the same
// variables, with the same types.
func TestEveryVariableResolves(t *testing.T) {
	req := directRequests()[1]
	for _, v := range variables {
		val, ok := activation{req}.ResolveName(v.name)
		if !ok {
			t.Errorf("%s: declared, not resolved", v.name)
			continue
		}
		_, isString := stringVars[v.name]
		_, isBool := boolVars[v.name]
		switch {
		case v.typ == cel.StringType && !isString && v.name != "request.method" && v.name != "request.path":
			t.Errorf("%s: a string, not in stringVars", v.name)
		case v.typ == cel.BoolType && !isBool:
			t.Errorf("%s: a bool, not in boolVars", v.name)
		}
		if got := fmt.Sprint(types.DefaultTypeAdapter.NativeToValue(val).Type()); got != v.typ.String() && v.typ.String() != "map(string, string)" {
			t.Errorf("%s: resolves to a %s, declared %s", v.name, got, v.typ)
		}
	}
	for name := range stringVars {
		if !declared(name) {
			t.Errorf("stringVars has %s, which is not declared", name)
		}
	}
	for name := range boolVars {
		if !declared(name) {
			t.Errorf("boolVars has %s, which is not declared", name)
		}
	}
}

func declared(name string) bool {
	for _, v := range variables {
		if v.name == name {
			return true
		}
	}
	return false
}

// docs/rules.md's request-model table lists every variable with its
// declared type (Variables), and nothing else: the reference cannot drift
// from the model.
func TestDocsListEveryVariable(t *testing.T) {
	b, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // name -> type, from "| `name` | type | …"
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if strings.ContainsAny(name, " `") || !strings.Contains(name, ".") {
			continue
		}
		rows[name] = strings.TrimSpace(cells[2])
	}
	types := map[string]string{"string": "string", "bool": "bool", "map(string, string)": "map(string, string)"}
	for _, v := range Variables() {
		typ, ok := rows[v[0]]
		if !ok {
			t.Errorf("docs/rules.md does not list %s", v[0])
			continue
		}
		if want := types[v[1]]; want == "" || typ != want {
			t.Errorf("docs/rules.md gives %s the type %q; the model's is %q", v[0], typ, v[1])
		}
		delete(rows, v[0])
	}
	for name := range rows {
		t.Errorf("docs/rules.md lists %s, which the request model does not have", name)
	}
}

// TestSharedMatches: conditions compiled with one set of match slots give,
// on every request, what each gives alone under CEL's interpreter, the
// shared matches() running once a request, and a request changed between
// evaluations (matchKnown cleared, as Evaluate does) is not answered from
// the results of before.
func TestSharedMatches(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ms := newMatchSlots()
	var conds []*condition
	for _, tc := range directCases {
		if !strings.Contains(tc.src, "matches") || !tc.direct {
			continue
		}
		for _, src := range []string{tc.src, "!(" + tc.src + ")", "request.method != 'OPTIONS' && " + tc.src} {
			c, err := newCondition(env, src, ms)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			conds = append(conds, c)
		}
	}
	if len(conds) < 6 || len(ms.ids) == 0 || len(ms.ids) >= len(conds) {
		t.Fatalf("%d conditions, %d slots: the cases share no match", len(conds), len(ms.ids))
	}
	reqs := directRequests()
	for i, req := range reqs {
		for pass := range 2 {
			if pass == 1 {
				// Another request's path and agent in the same Request.
				o := reqs[(i+1)%len(reqs)]
				req.Path, req.HTTP.Header = o.Path, o.HTTP.Header
			}
			req.matchKnown = 0
			for k, c := range conds {
				if want := interpreted(t, c, req); c.direct(req) != want {
					t.Errorf("request %d pass %d: condition %d on %q: direct %v, interpreter %v", i, pass, k, req.Path, !want, want)
				}
			}
		}
	}
}

// TestSlotsOnlyForDirectConditions: a condition left to CEL's
// interpreter takes none of the set's 64 match slots.
func TestSlotsOnlyForDirectConditions(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	ms := newMatchSlots()
	c, err := newCondition(env, `request.path.matches('^/a') && request.headers['x'] == 'y'`, ms)
	if err != nil {
		t.Fatal(err)
	}
	if c.direct != nil || len(ms.ids) != 0 {
		t.Errorf("direct %v, slots %v: want an interpreted condition holding no slot", c.direct != nil, ms.ids)
	}
	if c, err = newCondition(env, `request.path.matches('^/a') && request.method == 'GET'`, ms); err != nil || c.direct == nil || len(ms.ids) != 1 {
		t.Errorf("direct %v, slots %v, err %v: want a direct condition holding one slot", c != nil && c.direct != nil, ms.ids, err)
	}
}

// TestSlotsOfAnotherSet: conditions of two sets compiled apart number
// their matches from 0 both; one Request evaluated against both never
// takes one set's result for the other's.
func TestSlotsOfAnotherSet(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	a, err := newCondition(env, `request.path.matches('^/a')`, newMatchSlots())
	if err != nil {
		t.Fatal(err)
	}
	b, err := newCondition(env, `request.path.matches('^/b')`, newMatchSlots())
	if err != nil {
		t.Fatal(err)
	}
	req := directRequests()[0]
	req.Path = "/a/x"
	req.matchKnown = 0
	if !a.direct(req) || b.direct(req) || !a.direct(req) {
		t.Error("a set's match result was taken for another set's")
	}
}
