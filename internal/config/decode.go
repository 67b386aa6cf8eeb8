package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// shape reports, for node n meant to decode into type t, keys that t does
// not have, duplicate keys, and mappings, lists and scalars where another
// of the three is expected. extra are keys allowed beyond t's fields.
func (l *loader) shape(n *yaml.Node, t reflect.Type, path string, extra ...string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) {
		return // null leaves a field unset
	}
	if implementsUnmarshaler(t) {
		// Custom types check their own shape, but a mapping's duplicate
		// key is lost in decoding (the last would win): report it here.
		if n.Kind == yaml.MappingNode {
			l.duplicateKeys(n, path)
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			l.report(n, path, "expected a mapping, found "+describeNode(n))
			return
		}
		fields := yamlFields(t)
		seen := map[string]int{} // key → the line of its first occurrence
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				l.report(k, path, "expected a key, found "+describeNode(k))
				continue
			}
			kp := joinKey(path, k.Value)
			if first, ok := seen[k.Value]; ok {
				l.report(k, kp, duplicateKey(k.Value, first))
				continue
			}
			seen[k.Value] = k.Line
			f, ok := fields[k.Value]
			if !ok {
				if slices.Contains(extra, k.Value) || path == "" && strings.HasPrefix(k.Value, "x-") {
					continue // "x-" keys hold YAML anchors, as in Compose files
				}
				if t == reflect.TypeFor[Config]() && k.Value == "environments" {
					l.report(k, kp, "environments cannot be nested in an environment")
					continue
				}
				allowed := append(fieldNames(t), extra...)
				msg := fmt.Sprintf("unknown key %q", k.Value)
				if s := suggest(k.Value, allowed); s != "" {
					msg += fmt.Sprintf(", did you mean %q?", s)
					if !mappingHas(n, s) {
						// The field this key was meant to be is missing
						// because of the misspelling: that it is
						// required is not a second problem.
						l.f.bad[joinKey(path, s)] = true
					}
				}
				l.report(k, kp, msg, allowed...)
				continue
			}
			l.shape(v, f.Type, kp)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			l.report(n, path, "expected a mapping, found "+describeNode(n))
			return
		}
		seen := map[string]int{} // key → the line of its first occurrence
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				l.report(k, path, "expected a name, found "+describeNode(k))
				continue
			}
			kp := joinKey(path, k.Value)
			if first, ok := seen[k.Value]; ok {
				l.report(k, kp, duplicateKey(k.Value, first))
				continue
			}
			seen[k.Value] = k.Line
			l.shape(v, t.Elem(), kp)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			msg := "expected a list, found " + describeNode(n)
			if n.Kind == yaml.ScalarNode && !strings.ContainsAny(n.Value, ",[]{}\n") && len(n.Value) < 64 {
				msg += ": write [" + n.Value + "]"
			}
			l.report(n, path, msg)
			return
		}
		for i, item := range n.Content {
			l.shape(item, t.Elem(), indexPath(path, i))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			msg := "expected " + describeType(t) + ", found " + describeNode(n)
			if n.Kind == yaml.MappingNode && len(n.Content) == 2 && t.Kind() == reflect.String &&
				n.Content[0].Kind == yaml.ScalarNode && n.Content[1].Kind == yaml.ScalarNode {
				msg += fmt.Sprintf(`: for the string %q, leave out the space after ":" or quote it`,
					n.Content[0].Value+":"+n.Content[1].Value)
			}
			l.report(n, path, msg)
		}
	}
}

// duplicateKeys reports the scalar keys of mapping n that an earlier key
// of n already has.
func (l *loader) duplicateKeys(n *yaml.Node, path string) {
	seen := map[string]int{} // key → the line of its first occurrence
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode {
			continue // the type's own decoding reports it
		}
		if first, ok := seen[k.Value]; ok {
			l.report(k, joinKey(path, k.Value), duplicateKey(k.Value, first))
			continue
		}
		seen[k.Value] = k.Line
	}
}

// duplicateKey is the problem of a key written again in one mapping: YAML
// would let the last one win, so the first is named, to merge the two.
func duplicateKey(key string, firstLine int) string {
	return fmt.Sprintf("duplicate key %q (the first is at line %d)", key, firstLine)
}

// index records the position of every field path under n.
func (l *loader) index(n *yaml.Node, path string) {
	if _, ok := l.f.pos[path]; !ok && path != "" {
		l.f.pos[path] = Position{n.Line, n.Column}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			kp := joinKey(path, k.Value)
			if _, ok := l.f.pos[kp]; !ok { // the first of duplicate keys
				l.f.pos[kp] = Position{k.Line, k.Column}
				l.index(v, kp)
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			l.index(item, indexPath(path, i))
		}
	}
}

// decode stores node n into v, reporting values of the wrong type.
// Structure problems were reported by shape and are skipped here.
func (l *loader) decode(n *yaml.Node, v reflect.Value, path string) {
	if n == nil {
		return
	}
	if implementsUnmarshaler(v.Type()) {
		x := l.expandTree(n, path)
		if isNull(x) {
			l.f.unset[path] = true
		}
		if err := x.Decode(v.Addr().Interface()); err != nil {
			l.report(n, path, decodeErrorMsg(err))
		}
		return
	}
	if n.Kind == yaml.ScalarNode {
		n = l.expandScalar(n, path)
		if isNull(n) {
			l.f.unset[path] = true
			v.SetZero()
			return
		}
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		l.decode(n, v.Elem(), path)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := yamlFields(v.Type())
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if f, ok := fields[k.Value]; ok && k.Kind == yaml.ScalarNode {
				l.decode(n.Content[i+1], v.FieldByIndex(f.Index), joinKey(path, k.Value))
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode || v.Type().Key().Kind() != reflect.String {
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), len(n.Content)/2))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			e := reflect.New(v.Type().Elem()).Elem()
			l.decode(n.Content[i+1], e, joinKey(path, k.Value))
			v.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			l.decode(item, s.Index(i), indexPath(path, i))
		}
		v.Set(s)
	default:
		if n.Kind != yaml.ScalarNode {
			return
		}
		l.decodeScalar(n, v, path)
	}
}

var durationType = reflect.TypeFor[time.Duration]()

// decodeScalar stores scalar n into the basic value v.
func (l *loader) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	tag := n.ShortTag()
	ok := true
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		// yaml.v3 would truncate 1.5 to 1; only integers are integers.
		ok = tag == "!!int" || v.Type() == durationType
	case reflect.Bool:
		ok = tag == "!!bool"
	case reflect.Float32, reflect.Float64:
		ok = tag == "!!int" || tag == "!!float"
	}
	if ok {
		ok = n.Decode(v.Addr().Interface()) == nil
	}
	if !ok {
		l.report(n, path, "expected "+describeType(v.Type())+", found "+describeNode(n))
	}
}

// expandScalar returns scalar n with variable references expanded and its
// type resolved again from the result: "${N:-10}" is the integer 10; an
// empty result is null, leaving the field unset.
func (l *loader) expandScalar(n *yaml.Node, path string) *yaml.Node {
	if n.Kind != yaml.ScalarNode || strings.IndexByte(n.Value, '$') < 0 {
		return n
	}
	out, refs, msgs, missing := expand(n.Value, l.lookup)
	for _, m := range msgs {
		l.report(n, path, m)
	}
	for _, name := range missing {
		if !slices.Contains(l.f.missing, name) {
			l.f.missing = append(l.f.missing, name)
		}
		if l.f.missingAt == nil {
			l.f.missingAt = map[string][]string{}
		}
		if !slices.Contains(l.f.missingAt[name], path) {
			l.f.missingAt[name] = append(l.f.missingAt[name], path)
		}
	}
	c := *n
	c.Value = out
	if refs {
		c.Style &^= yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle
		switch t := (&yaml.Node{Kind: yaml.ScalarNode, Value: out}).ShortTag(); {
		case out == "":
			c.Tag = "!!null"
		case t == "!!int" || t == "!!float" || t == "!!bool":
			c.Tag = t
		default:
			c.Tag = "!!str"
		}
	}
	return &c
}

// expandTree returns a copy of n with every scalar value (not key)
// expanded.
func (l *loader) expandTree(n *yaml.Node, path string) *yaml.Node {
	switch n.Kind {
	case yaml.ScalarNode:
		return l.expandScalar(n, path)
	case yaml.MappingNode:
		c := *n
		c.Content = slices.Clone(n.Content)
		for i := 1; i < len(c.Content); i += 2 {
			c.Content[i] = l.expandTree(c.Content[i], joinKey(path, c.Content[i-1].Value))
		}
		return &c
	case yaml.SequenceNode:
		c := *n
		c.Content = slices.Clone(n.Content)
		for i := range c.Content {
			c.Content[i] = l.expandTree(c.Content[i], indexPath(path, i))
		}
		return &c
	}
	return n
}

func decodeErrorMsg(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			msgs[i] = yamlLine.ReplaceAllString("yaml: "+e, "")
		}
		return strings.Join(msgs, "; ")
	}
	return err.Error()
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func implementsUnmarshaler(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(unmarshalerType)
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describeNode says what n is, for "found …" in messages.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return quoteExcerpt(n.Value)
	}
	return "nothing"
}

// describeType says what a value of type t is written as.
func describeType(t reflect.Type) string {
	if t == durationType {
		return "a duration such as 5m"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a " + t.String()
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.StructField

// yamlFields maps the YAML keys of struct type t to its fields. The map
// is shared: do not modify it.
func yamlFields(t reflect.Type) map[string]reflect.StructField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.StructField)
	}
	m := map[string]reflect.StructField{}
	if t.Kind() == reflect.Struct {
		for _, f := range reflect.VisibleFields(t) {
			if name := yamlName(f); name != "" {
				m[name] = f
			}
		}
	}
	fieldCache.Store(t, m)
	return m
}

// fieldNames lists the YAML keys of struct type t in declaration order.
func fieldNames(t reflect.Type) []string {
	var names []string
	for _, f := range reflect.VisibleFields(t) {
		if name := yamlName(f); name != "" {
			names = append(names, name)
		}
	}
	return names
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() || f.Anonymous {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	switch name {
	case "-":
		return ""
	case "":
		return strings.ToLower(f.Name)
	}
	return name
}

// suggest returns the name in names closest to s, if it is close enough
// to be a likely misspelling.
func suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), n); d < bestD && d < len(n)/2+1 {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the number of one-letter insertions, deletions,
// substitutions and swaps of two neighbouring letters that turn a into b
// (the optimal string alignment distance): a swap is the commonest typo
// ("ulr" for "url") and counts as one.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// mappingHas reports whether mapping n has the scalar key k.
func mappingHas(n *yaml.Node, k string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Kind == yaml.ScalarNode && n.Content[i].Value == k {
			return true
		}
	}
	return false
}
