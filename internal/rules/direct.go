package rules

import (
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
)

// A condition is a compiled boolean CEL expression over the request
// model. Most conditions in rule sets are a few comparisons of request
// attributes with constants joined by && and || ("route.group == 'api' &&
// !session.valid", "request.method != 'OPTIONS' &&
// request.path.matches('...')"); those are also compiled into a tree of Go
// functions, direct, which gives the same answer as CEL's interpreter
// without its per-evaluation set-up (an execution frame, an activation,
// every value boxed). Anything outside that subset is left to the
// interpreter.
type condition struct {
	prg    cel.Program
	direct func(*Request) bool // nil: evaluate prg
	// reads are the request model's variables the condition reads.
	reads map[string]bool
}

// readsPrefix reports whether the condition reads a variable whose name
// starts with prefix.
func (c *condition) readsPrefix(prefix string) bool {
	for v := range c.reads {
		if strings.HasPrefix(v, prefix) {
			return true
		}
	}
	return false
}

// eval reports whether the condition holds for req. An error comes only
// from the interpreter (the direct subset cannot fail).
func (c *condition) eval(req *Request) (bool, error) {
	if c.direct != nil {
		return c.direct(req), nil
	}
	out, _, err := c.prg.Eval(activation{req})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	return ok && b, nil
}

// newCondition compiles src, a boolean expression in env. ms, when not
// nil, is shared by the conditions of one rule set (see matchSlots).
func newCondition(env *cel.Env, src string, ms *matchSlots) (*condition, error) {
	ast, prg, err := checkExpr(env, src, cel.BoolType)
	if err != nil {
		return nil, err
	}
	return &condition{prg: prg, direct: directCondition(ast, ms), reads: variablesRead(ast)}, nil
}

// matchSlots numbers the distinct matches() of a rule set's direct
// conditions, a variable and a pattern each: a match that several
// conditions make (MaveDB's CSV path pattern guards two rules with
// different conditions) runs once a request, its result kept in the
// Request's bits (slots 0–63; any further ones run every time). Evaluate
// and Explain forget the results when they start, and a Request meeting
// another set's slots (sets compiled apart, then joined) forgets them too.
type matchSlots struct{ ids map[string]int }

func newMatchSlots() *matchSlots { return &matchSlots{ids: map[string]int{}} }

// slot returns the slot of variable v matched against pattern, or -1.
func (ms *matchSlots) slot(v, pattern string) int {
	if ms == nil {
		return -1
	}
	k := v + "\x00" + pattern
	if n, ok := ms.ids[k]; ok {
		return n
	}
	if len(ms.ids) == 64 {
		return -1
	}
	ms.ids[k] = len(ms.ids)
	return ms.ids[k]
}

// The request model's string and boolean variables as Go functions: the
// CEL activation (ResolveName) reads them through the same functions, so
// the two evaluations cannot disagree on what a variable is.
var (
	stringVars = map[string]func(*Request) string{
		"request.method":     func(r *Request) string { return r.method() },
		"request.path":       func(r *Request) string { return r.Path },
		"request.host":       func(r *Request) string { return hostOnly(r.HTTP.Host) },
		"request.scheme":     scheme,
		"request.user_agent": userAgent,
		"route.name":         func(r *Request) string { return r.Route },
		"route.group":        func(r *Request) string { return r.RouteGroup },
		"client.ip":          clientIP,
		"api_client.id":      func(r *Request) string { return r.APIClient },
		"api_client.plan":    func(r *Request) string { return r.APIClientPlan },
	}
	boolVars = map[string]func(*Request) bool{
		"client.internal": func(r *Request) bool { return r.Internal },
		"session.present": func(r *Request) bool { return r.SessionPresent },
		"session.valid":   func(r *Request) bool { return r.SessionValid },
	}
)

// userAgent is Header.Get("User-Agent") without Get's canonicalizing of
// a name that is canonical already.
func userAgent(r *Request) string {
	if v := r.HTTP.Header["User-Agent"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func scheme(r *Request) string {
	if r.Scheme != "" {
		return r.Scheme
	}
	if r.HTTP.TLS != nil {
		return "https"
	}
	return "http"
}

func clientIP(r *Request) string {
	if !r.ClientIP.IsValid() {
		return ""
	}
	return r.ClientIP.String()
}

// directCondition returns the Go evaluation of a checked boolean
// expression, or nil when it uses anything outside the subset below. In
// the subset no subexpression can fail (every variable in it always has a
// value, every pattern compiled), so CEL's rules for errors under && and
// || never apply and Go's && and || give CEL's answer:
//
//	true, false, a boolean variable
//	!e, e && e, e || e
//	s == 'lit', s != 'lit' (either way round), s == s, s != s
//	b == true, b != false (a boolean variable and a literal)
//	s.startsWith('lit'), s.endsWith('lit'), s.contains('lit'), s.matches('lit'), matches(s, 'lit')
//	s in ['lit', ...]
//
// where s is a string variable of the request model and b a boolean one.
func directCondition(a *cel.Ast, ms *matchSlots) func(*Request) bool {
	if a == nil || !a.IsChecked() {
		return nil
	}
	nat := a.NativeRep()
	d := directCompiler{refs: nat.ReferenceMap()}
	f, _ := d.boolean(nat.Expr())
	if f == nil || ms == nil {
		return f
	}
	// Direct: compiled again with the set's match slots (a condition left
	// to the interpreter takes none of the 64).
	d.slots = ms
	f, _ = d.boolean(nat.Expr())
	return f
}

type directCompiler struct {
	refs  map[int64]*celast.ReferenceInfo
	slots *matchSlots
}

// variable returns the name of the request-model variable e reads, or "".
func (d *directCompiler) variable(e celast.Expr) string {
	switch e.Kind() {
	case celast.IdentKind, celast.SelectKind:
		if ref, ok := d.refs[e.ID()]; ok && ref.Value == nil {
			return ref.Name
		}
	}
	return ""
}

func (d *directCompiler) stringVar(e celast.Expr) func(*Request) string {
	return stringVars[d.variable(e)]
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

func boolLiteral(e celast.Expr) (bool, bool) {
	if e.Kind() != celast.LiteralKind {
		return false, false
	}
	b, ok := e.AsLiteral().(types.Bool)
	return bool(b), ok
}

func (d *directCompiler) boolean(e celast.Expr) (func(*Request) bool, bool) {
	if b, ok := boolLiteral(e); ok {
		return func(*Request) bool { return b }, true
	}
	if f := boolVars[d.variable(e)]; f != nil {
		return f, true
	}
	if e.Kind() != celast.CallKind {
		return nil, false
	}
	call := e.AsCall()
	args := call.Args()
	if call.IsMemberFunction() {
		return d.method(call.FunctionName(), call.Target(), args)
	}
	switch fn := call.FunctionName(); fn {
	case operators.LogicalNot:
		if len(args) != 1 {
			return nil, false
		}
		x, ok := d.boolean(args[0])
		if !ok {
			return nil, false
		}
		return func(r *Request) bool { return !x(r) }, true
	case operators.LogicalAnd, operators.LogicalOr:
		// The parser balances long chains into a tree of two-argument
		// calls; a chain left as one call is folded here.
		if len(args) < 2 {
			return nil, false
		}
		fs := make([]func(*Request) bool, len(args))
		for i, a := range args {
			f, ok := d.boolean(a)
			if !ok {
				return nil, false
			}
			fs[i] = f
		}
		f := fs[0]
		for _, g := range fs[1:] {
			f = join(fn == operators.LogicalAnd, f, g)
		}
		return f, true
	case operators.Equals, operators.NotEquals:
		if len(args) != 2 {
			return nil, false
		}
		eq, ok := d.equal(args[0], args[1])
		if !ok {
			return nil, false
		}
		if fn == operators.NotEquals {
			return func(r *Request) bool { return !eq(r) }, true
		}
		return eq, true
	case operators.In:
		if len(args) != 2 {
			return nil, false
		}
		return d.in(args[0], args[1])
	case overloads.Matches:
		if len(args) != 2 {
			return nil, false
		}
		return d.method(overloads.Matches, args[0], args[1:])
	}
	return nil, false
}

func join(and bool, f, g func(*Request) bool) func(*Request) bool {
	if and {
		return func(r *Request) bool { return f(r) && g(r) }
	}
	return func(r *Request) bool { return f(r) || g(r) }
}

// equal compiles x == y for a string variable and a string literal, two
// string variables, or a boolean variable and a boolean literal.
func (d *directCompiler) equal(x, y celast.Expr) (func(*Request) bool, bool) {
	if _, ok := stringLiteral(x); ok {
		x, y = y, x
	}
	if _, ok := boolLiteral(x); ok {
		x, y = y, x
	}
	if s := d.stringVar(x); s != nil {
		if lit, ok := stringLiteral(y); ok {
			return func(r *Request) bool { return s(r) == lit }, true
		}
		if t := d.stringVar(y); t != nil {
			return func(r *Request) bool { return s(r) == t(r) }, true
		}
		return nil, false
	}
	if b := boolVars[d.variable(x)]; b != nil {
		if lit, ok := boolLiteral(y); ok {
			return func(r *Request) bool { return b(r) == lit }, true
		}
	}
	return nil, false
}

// method compiles target.name(arg) for a string variable and a string
// literal argument.
func (d *directCompiler) method(name string, target celast.Expr, args []celast.Expr) (func(*Request) bool, bool) {
	s := d.stringVar(target)
	if s == nil || len(args) != 1 {
		return nil, false
	}
	lit, ok := stringLiteral(args[0])
	if !ok {
		return nil, false
	}
	switch name {
	case overloads.StartsWith:
		return func(r *Request) bool { return strings.HasPrefix(s(r), lit) }, true
	case overloads.EndsWith:
		return func(r *Request) bool { return strings.HasSuffix(s(r), lit) }, true
	case overloads.Contains:
		return func(r *Request) bool { return strings.Contains(s(r), lit) }, true
	case overloads.Matches:
		m, err := newMatcher(lit)
		if err != nil {
			return nil, false // the interpreter reports it
		}
		slot := d.slots.slot(d.variable(target), lit)
		if slot < 0 {
			return func(r *Request) bool { return m.MatchString(s(r)) }, true
		}
		bit, tab := uint64(1)<<slot, d.slots
		return func(r *Request) bool {
			if r.matchTab != tab {
				r.matchTab, r.matchKnown = tab, 0 // another set's slots
			}
			if r.matchKnown&bit != 0 {
				return r.matchHolds&bit != 0
			}
			b := m.MatchString(s(r))
			r.matchKnown |= bit
			if b {
				r.matchHolds |= bit
			} else {
				r.matchHolds &^= bit // a result from before matchKnown was cleared
			}
			return b
		}, true
	}
	return nil, false
}

// in compiles s in ['lit', ...].
func (d *directCompiler) in(x, list celast.Expr) (func(*Request) bool, bool) {
	s := d.stringVar(x)
	if s == nil || list.Kind() != celast.ListKind {
		return nil, false
	}
	l := list.AsList()
	if len(l.OptionalIndices()) > 0 {
		return nil, false
	}
	lits := make([]string, 0, l.Size())
	for _, el := range l.Elements() {
		lit, ok := stringLiteral(el)
		if !ok {
			return nil, false
		}
		lits = append(lits, lit)
	}
	return func(r *Request) bool {
		v := s(r)
		for _, lit := range lits {
			if v == lit {
				return true
			}
		}
		return false
	}, true
}
