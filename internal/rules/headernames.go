package rules

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
)

// headerMaps are the variables whose keys are header names, which the
// request model (and count_when's response) holds in lower case only.
var headerMaps = map[string]bool{"request.headers": true, "response.headers": true}

// checkHeaderNames reports a constant header name with an upper-case
// letter looked up in a header map — request.headers['X-Api-Key'],
// 'X-Api-Key' in request.headers, request.headers[?'X-Api-Key'],
// has(request.headers.Authorization) — none of which can ever find the
// field: the lookup is an evaluation error that skips the rule, the
// test always false. It names the lower-case spelling that works.
func checkHeaderNames(a *cel.Ast) error {
	nat := a.NativeRep()
	refs := nat.ReferenceMap()
	headerMap := func(e celast.Expr) string {
		if e.Kind() != celast.IdentKind && e.Kind() != celast.SelectKind {
			return ""
		}
		if ref, ok := refs[e.ID()]; ok && ref.Value == nil && headerMaps[ref.Name] {
			return ref.Name
		}
		return ""
	}
	var found error
	celast.PreOrderVisit(nat.Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if found != nil {
			return
		}
		var m string
		var name string
		var at int64
		switch e.Kind() {
		case celast.CallKind:
			call := e.AsCall()
			args := call.Args()
			if len(args) != 2 {
				return
			}
			var k celast.Expr
			switch call.FunctionName() {
			case operators.Index, operators.OptIndex:
				m, k = headerMap(args[0]), args[1]
			case operators.In:
				m, k = headerMap(args[1]), args[0]
			default:
				return
			}
			s, ok := stringLiteral(k)
			if !ok {
				return
			}
			name, at = s, k.ID()
		case celast.SelectKind:
			sel := e.AsSelect()
			m, name, at = headerMap(sel.Operand()), sel.FieldName(), e.ID()
		default:
			return
		}
		if m == "" || name == strings.ToLower(name) {
			return
		}
		loc := nat.SourceInfo().GetStartLocation(at)
		found = fmt.Errorf("CEL: at %d:%d: %s holds header names in lower case, so %q is never in it: write %q",
			loc.Line(), loc.Column()+1, m, name, strings.ToLower(name))
	}))
	return found
}

// variablesRead returns the names of the request model's variables that
// a checked expression reads ("session.valid", "request.path").
func variablesRead(a *cel.Ast) map[string]bool {
	reads := map[string]bool{}
	for _, ref := range a.NativeRep().ReferenceMap() {
		if ref.Value == nil && ref.Name != "" {
			reads[ref.Name] = true
		}
	}
	return reads
}
