package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest configuration file Load and Parse accept.
const MaxFileSize = 4 << 20

// maxAliasNodes bounds the nodes that YAML aliases may add to a document,
// beyond the ones it has, so that a "billion laughs" document is refused
// instead of expanded.
const maxAliasNodes = 10000

// A File is a loaded configuration file: the effective Config, and the
// place in the file of every field so that any stage can report a problem
// where it is.
//
// A field path names a field as written in the file, with YAML keys joined
// by "." and sequence indexes in brackets: "mode", "client_ip.header",
// "upstreams.api.url", "rules[2].limits[0]", "rules[3].message.es". A key
// that is not made of letters, digits, "_" and "-" is quoted in brackets:
// `upstreams["a.b"].url`. The path of a Message given as one string is the
// message field itself. For fields set by an environment overlay the place
// is in the overlay.
type File struct {
	// Name is the file name as given to Load or Parse; problems carry it.
	Name string
	// Env is the environment applied to the base settings, "" for none.
	Env string
	// Environments are the names of the environments the file defines,
	// sorted.
	Environments []string
	// Config is the effective configuration: the base settings, the
	// environment Env applied to them, and variables expanded. Defaults
	// are not applied; see Config.ApplyDefaults.
	Config Config

	pos   map[string]Position // field path → place
	unset map[string]bool     // field paths written with a null value
	bad   map[string]bool     // field paths that had load problems
}

// A Position is a place in a file: 1-based line and column.
type Position struct {
	Line, Column int
}

// Load reads the configuration file at path, applies the environment env
// (see Parse) and expands variables with lookup.
//
// The error is Problems when the file could be read; the File is then
// returned too, with what could be decoded, so that its Validate can add
// its own problems (it leaves out fields that already have one). Other
// errors (the file cannot be read) come with a nil File.
func Load(path, env string, lookup func(string) (string, bool)) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: read %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %w", path, err)
	}
	return Parse(path, data, env, lookup)
}

// Parse reads a configuration from data; name is used in problems.
//
// The top-level "environments" mapping, if any, maps environment names to
// partial documents. When env is not empty, that environment is applied
// to the base settings (everything but "environments"): mappings are
// merged key by key; lists of named items (routes, rules) are merged item
// by item by name, and may only change items the base defines; any other
// value replaces the base's. Then ${VAR} references in scalar values are
// expanded with lookup (see Expand).
//
// Parse reports every problem it finds at once: YAML syntax, unknown and
// duplicate keys (in every environment, applied or not), values of the
// wrong type, and variable references. The File is nil only if data is
// not YAML at all.
func Parse(name string, data []byte, env string, lookup func(string) (string, bool)) (*File, error) {
	l := &loader{
		f:      &File{Name: name, Env: env, pos: map[string]Position{}, unset: map[string]bool{}, bad: map[string]bool{}},
		lookup: lookup,
	}
	l.load(data)
	return l.f, l.problems.Err()
}

// loader carries one Parse.
type loader struct {
	f        *File
	lookup   func(string) (string, bool)
	problems Problems
	budget   int        // nodes that aliases may still add
	bombed   bool       // the budget ran out
	envNode  *yaml.Node // the "environments" key, if any
	lines    int        // in the file
}

func (l *loader) report(n *yaml.Node, path, msg string, allowed ...string) {
	line := 0
	if n != nil {
		line = min(n.Line, l.lines) // an empty node at the very end
	}
	l.problems = append(l.problems, Problem{File: l.f.Name, Line: line, Field: path, Msg: msg, Allowed: allowed})
	l.f.bad[path] = true
}

var (
	yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)
	// yaml.v3 numbers the lines of parser (not scanner) errors from 0.
	yamlParserError = regexp.MustCompile(`^(did not find expected|found undefined tag handle|found duplicate %|found incompatible YAML document)`)
	yamlAnchor      = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

func (l *loader) load(data []byte) {
	if len(data) > MaxFileSize {
		l.report(nil, "", fmt.Sprintf("file is larger than %d MiB", MaxFileSize>>20))
		return
	}
	l.lines = countLines(data)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		l.syntax(err, data)
		return
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.report(&extra, "", "a configuration file holds one YAML document, found another")
	} else if err != io.EOF {
		l.syntax(err, data)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == 0 || isNull(root) {
		l.report(nil, "", "the file is empty")
		return
	}
	l.budget = maxAliasNodes
	root = l.resolve(root, 0)
	if root.Kind != yaml.MappingNode {
		l.report(root, "", "expected a mapping of settings such as \"upstreams:\", found "+describeNode(root))
		return
	}

	base, envs := l.splitEnvironments(root)
	cfgType := reflect.TypeFor[Config]()
	l.shape(base, cfgType, "", topLevelExtra...)
	var overlays = map[string]*yaml.Node{}
	for _, e := range envs {
		l.shape(e.doc, cfgType, envPath(e.name))
		overlays[e.name] = l.merge(base, e.doc, cfgType, envPath(e.name), "")
		l.f.Environments = append(l.f.Environments, e.name)
	}
	slices.Sort(l.f.Environments)

	eff := base
	if l.f.Env != "" {
		o, ok := overlays[l.f.Env]
		if !ok {
			msg := fmt.Sprintf("environment %q is not defined", l.f.Env)
			if len(l.f.Environments) == 0 {
				msg += " (the file has no environments section)"
			}
			l.report(l.envNode, "environments", msg, l.f.Environments...)
			l.f.bad[""] = true
			return
		}
		eff = o
	}
	l.index(eff, "")
	l.decode(eff, reflect.ValueOf(&l.f.Config).Elem(), "")
}

// syntax reports a YAML syntax error in data; nothing else can be
// checked.
func (l *loader) syntax(err error, data []byte) {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		if yamlParserError.MatchString(msg) {
			line++ // the line where the broken construct starts
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if yamlParserError.MatchString(msg) {
			line = 1 // yaml.v3 leaves out line 0 of 0-based parser errors
		}
		if m := yamlAnchor.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				line = bytes.Count(data[:i], []byte("\n")) + 1
			}
		}
	}
	line = min(line, l.lines) // errors at the end of the stream
	if strings.HasPrefix(msg, "did not find expected ',' or") && line > 0 {
		if text, _, _ := strings.Cut(string(data[lineStart(data, line):]), "\n"); strings.Contains(text, "${") {
			msg += ` (in [ ] or { }, quote a value that holds "${…}")`
		}
	}
	l.problems = append(l.problems, Problem{File: l.f.Name, Line: line, Msg: "YAML syntax: " + msg})
	l.f.bad[""] = true
}

// countLines returns the number of lines in data as YAML counts them:
// CR LF, CR, LF, NEL, LS and PS each end a line.
func countLines(data []byte) int {
	n := 1
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			n++
		case data[i] == '\n':
			n++
		case bytes.HasPrefix(data[i:], []byte("\u0085")),
			bytes.HasPrefix(data[i:], []byte("\u2028")),
			bytes.HasPrefix(data[i:], []byte("\u2029")):
			n++
		}
	}
	return n
}

// lineStart returns the offset in data of 1-based line n.
func lineStart(data []byte, n int) int {
	off := 0
	for ; n > 1; n-- {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return len(data)
		}
		off += i + 1
	}
	return off
}

// resolve returns n with aliases replaced by copies of what they name and
// merge keys ("<<") applied, spending l.budget on the nodes that aliases
// add. An alias past the budget, or inside what it names, becomes null
// and a problem.
func (l *loader) resolve(n *yaml.Node, inAlias int) *yaml.Node {
	if inAlias > 0 {
		if l.budget--; l.budget < 0 {
			return nil
		}
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil || inAlias > 100 {
			l.report(n, "", "alias *"+n.Value+" refers to itself")
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
		}
		c := l.resolve(n.Alias, inAlias+1)
		if c == nil && inAlias > 0 {
			return nil // reported by the outermost alias
		}
		if c == nil {
			if !l.bombed {
				l.bombed = true
				l.report(n, "", fmt.Sprintf("aliases expand to more than %d nodes", maxAliasNodes))
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
		}
		return c
	case yaml.MappingNode, yaml.SequenceNode, yaml.DocumentNode:
		c := *n
		c.Content = make([]*yaml.Node, 0, len(n.Content))
		for _, child := range n.Content {
			r := l.resolve(child, inAlias)
			if r == nil {
				return nil
			}
			c.Content = append(c.Content, r)
		}
		if c.Kind == yaml.MappingNode {
			l.applyMerges(&c)
		}
		return &c
	default:
		c := *n
		return &c
	}
}

// applyMerges replaces "<<" keys of mapping m by the pairs of the
// mappings they name that m does not set itself.
func (l *loader) applyMerges(m *yaml.Node) {
	var own, merged []*yaml.Node
	var sources []*yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			switch v.Kind {
			case yaml.MappingNode:
				sources = append(sources, v)
			case yaml.SequenceNode:
				sources = append(sources, v.Content...)
			default:
				sources = append(sources, v)
			}
			continue
		}
		own = append(own, k, v)
	}
	if sources == nil {
		return
	}
	seen := map[string]bool{}
	for i := 0; i < len(own); i += 2 {
		seen[own[i].Value] = true
	}
	for _, src := range sources {
		if src.Kind != yaml.MappingNode {
			l.report(src, "", "a merge key (<<) needs a mapping or a list of mappings, found "+describeNode(src))
			continue
		}
		for i := 0; i+1 < len(src.Content); i += 2 {
			if k := src.Content[i]; !seen[k.Value] {
				seen[k.Value] = true
				merged = append(merged, k, src.Content[i+1])
			}
		}
	}
	m.Content = append(own, merged...)
}

// topLevelExtra are the top-level keys that are not Config fields.
var topLevelExtra = []string{"environments"}

type environment struct {
	name string
	doc  *yaml.Node
}

var envName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func envPath(name string) string { return joinKey("environments", name) }

// concatPath appends relative field path rel to path p.
func concatPath(p, rel string) string {
	switch {
	case p == "":
		return rel
	case rel == "" || rel[0] == '[':
		return p + rel
	}
	return p + "." + rel
}

// splitEnvironments returns root without its "environments" key, and the
// environments it defines, checked.
func (l *loader) splitEnvironments(root *yaml.Node) (*yaml.Node, []environment) {
	base := *root
	base.Content = nil
	var envsNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "environments" {
			if envsNode != nil {
				l.report(k, "environments", "duplicate key \"environments\"")
			}
			envsNode, l.envNode = v, k
			continue
		}
		base.Content = append(base.Content, k, v)
	}
	if envsNode == nil || isNull(envsNode) {
		return &base, nil
	}
	if envsNode.Kind != yaml.MappingNode {
		l.report(envsNode, "environments", "expected a mapping from environment name to settings, found "+describeNode(envsNode))
		return &base, nil
	}
	var envs []environment
	seen := map[string]bool{}
	for i := 0; i+1 < len(envsNode.Content); i += 2 {
		k, v := envsNode.Content[i], envsNode.Content[i+1]
		path := envPath(k.Value)
		switch {
		case k.Kind != yaml.ScalarNode:
			l.report(k, "environments", "expected an environment name, found "+describeNode(k))
			continue
		case seen[k.Value]:
			l.report(k, path, fmt.Sprintf("duplicate environment %q", k.Value))
			continue
		case !envName.MatchString(k.Value):
			l.report(k, path, fmt.Sprintf("environment name %q must be lower-case letters, digits, _ and -", k.Value))
		}
		seen[k.Value] = true
		if isNull(v) {
			v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line, Column: v.Column}
		}
		if v.Kind != yaml.MappingNode {
			l.report(v, path, "expected a mapping of settings, found "+describeNode(v))
			continue
		}
		envs = append(envs, environment{name: k.Value, doc: v})
	}
	return &base, envs
}

// shape reports, for node n meant to decode into type t, keys that t does
// not have, duplicate keys, and mappings, lists and scalars where another
// of the three is expected. extra are keys allowed beyond t's fields.
func (l *loader) shape(n *yaml.Node, t reflect.Type, path string, extra ...string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) || implementsUnmarshaler(t) {
		return // null leaves a field unset; custom types check themselves
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			l.report(n, path, "expected a mapping, found "+describeNode(n))
			return
		}
		fields := yamlFields(t)
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				l.report(k, path, "expected a key, found "+describeNode(k))
				continue
			}
			kp := joinKey(path, k.Value)
			if seen[k.Value] {
				l.report(k, kp, fmt.Sprintf("duplicate key %q", k.Value))
				continue
			}
			seen[k.Value] = true
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
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				l.report(k, path, "expected a name, found "+describeNode(k))
				continue
			}
			kp := joinKey(path, k.Value)
			if seen[k.Value] {
				l.report(k, kp, fmt.Sprintf("duplicate key %q", k.Value))
				continue
			}
			seen[k.Value] = true
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

// merge returns base with overlay over applied, for type t; neither is
// modified. envPath prefixes the paths of problems in the overlay.
func (l *loader) merge(base, over *yaml.Node, t reflect.Type, envPath, path string) *yaml.Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if base == nil || over == nil || base.Kind != over.Kind || implementsUnmarshaler(t) {
		if over == nil {
			return base
		}
		return over
	}
	switch {
	case over.Kind == yaml.MappingNode && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map):
		fields := yamlFields(t)
		m := *base
		m.Content = slices.Clone(base.Content)
		for i := 0; i+1 < len(over.Content); i += 2 {
			k, v := over.Content[i], over.Content[i+1]
			var ft reflect.Type
			if t.Kind() == reflect.Struct {
				f, ok := fields[k.Value]
				if !ok {
					continue // reported by shape
				}
				ft = f.Type
			} else {
				ft = t.Elem()
			}
			j := mappingIndex(&m, k.Value)
			if j < 0 && addsNamedItems(ft) {
				// Nothing to change: check the names against none.
				empty := &yaml.Node{Kind: v.Kind, Tag: v.Tag, Line: v.Line, Column: v.Column}
				l.merge(empty, v, ft, envPath, joinKey(path, k.Value))
				continue
			}
			if j < 0 {
				if t.Kind() == reflect.Map {
					l.report(k, concatPath(envPath, joinKey(path, k.Value)),
						fmt.Sprintf("%s has no entry %q to change (an environment cannot add one)", path, k.Value),
						mappingKeys(base)...)
					continue
				}
				m.Content = append(m.Content, k, v)
				continue
			}
			// The overlay's key, so the field's place is in the overlay.
			m.Content[j] = k
			m.Content[j+1] = l.merge(m.Content[j+1], v, ft, envPath, joinKey(path, k.Value))
		}
		return &m
	case over.Kind == yaml.SequenceNode && t.Kind() == reflect.Slice && namedStruct(t.Elem()):
		return l.mergeNamed(base, over, t.Elem(), envPath, path)
	}
	return over
}

// mergeNamed merges the items of list over into the items of list base
// that have the same name.
func (l *loader) mergeNamed(base, over *yaml.Node, t reflect.Type, envPath, path string) *yaml.Node {
	s := *base
	s.Content = slices.Clone(base.Content)
	var names []string
	byName := map[string]int{}
	for i, item := range base.Content {
		if n := itemName(item); n != "" {
			names = append(names, n)
			if _, dup := byName[n]; !dup {
				byName[n] = i
			}
		}
	}
	done := map[string]bool{}
	for i, item := range over.Content {
		ip := concatPath(envPath, indexPath(path, i))
		if item.Kind != yaml.MappingNode {
			continue // reported by shape
		}
		name := itemName(item)
		if name == "" {
			l.report(item, ip, "an item in an environment needs a name, the name of the "+path+" item it changes")
			continue
		}
		if done[name] {
			l.report(item, joinKey(ip, "name"), fmt.Sprintf("%q is changed twice", name))
			continue
		}
		done[name] = true
		j, ok := byName[name]
		if !ok {
			l.report(item, joinKey(ip, "name"),
				fmt.Sprintf("%s has no item named %q to change (an environment cannot add one)", path, name), names...)
			continue
		}
		s.Content[j] = l.merge(s.Content[j], item, t, envPath, indexPath(path, j))
	}
	return &s
}

// addsNamedItems reports whether a value of type t holds items named by
// the file (upstreams, routes, rules), which an environment may change
// but not add.
func addsNamedItems(t reflect.Type) bool {
	if implementsUnmarshaler(t) {
		return false
	}
	return t.Kind() == reflect.Map || t.Kind() == reflect.Slice && namedStruct(t.Elem())
}

// namedStruct reports whether t is a struct with a "name" field, whose
// lists environments merge by name.
func namedStruct(t reflect.Type) bool {
	if t.Kind() != reflect.Struct {
		return false
	}
	_, ok := yamlFields(t)["name"]
	return ok
}

func itemName(item *yaml.Node) string {
	if item.Kind != yaml.MappingNode {
		return ""
	}
	if j := mappingIndex(item, "name"); j >= 0 && item.Content[j+1].Kind == yaml.ScalarNode {
		return item.Content[j+1].Value
	}
	return ""
}

// mappingIndex returns the index in m.Content of key k, or -1.
func mappingIndex(m *yaml.Node, k string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if c := m.Content[i]; c.Kind == yaml.ScalarNode && c.Value == k {
			return i
		}
	}
	return -1
}

func mappingKeys(m *yaml.Node) []string {
	var keys []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		keys = append(keys, m.Content[i].Value)
	}
	slices.Sort(keys)
	return keys
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
	out, refs, msgs := expand(n.Value, l.lookup)
	for _, m := range msgs {
		l.report(n, path, m)
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

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinKey appends mapping key k to field path p.
func joinKey(p, k string) string {
	if !plainKey.MatchString(k) {
		return p + "[" + strconv.Quote(k) + "]"
	}
	if p == "" {
		return k
	}
	return p + "." + k
}

// indexPath appends sequence index i to field path p.
func indexPath(p string, i int) string { return p + "[" + strconv.Itoa(i) + "]" }

// parentPath returns the path of the field that contains the one at p,
// "" for a top-level field.
func parentPath(p string) string {
	last := 0 // start of the last element
	inQuote := false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '.' || c == '[':
			last = i
		}
	}
	return p[:last]
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

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Line returns the line of the field at path, or of its nearest enclosing
// field that the file sets (see File for the path format); 0 if none.
func (f *File) Line(path string) int { return f.Position(path).Line }

// Position returns the place of the field at path, or of its nearest
// enclosing field that the file sets; the zero Position if none.
func (f *File) Position(path string) Position {
	if f == nil {
		return Position{}
	}
	for {
		if p, ok := f.pos[path]; ok {
			return p
		}
		if path == "" {
			return Position{}
		}
		path = parentPath(path)
	}
}

// Has reports whether the file (or the environment applied to it) sets
// the field at path to a value, even a zero one: it tells "ipv4_prefix: 0"
// from no ipv4_prefix, or "ipv4_prefix:" or one that expands to "".
func (f *File) Has(path string) bool {
	if f == nil {
		return false
	}
	_, ok := f.pos[path]
	return ok && path != "" && !f.unset[path]
}

// Problem returns a problem with the field at path, placed at its line
// (see Line). Stages after loading use it to report in the same form.
func (f *File) Problem(path, msg string, allowed ...string) Problem {
	p := Problem{Line: f.Line(path), Field: path, Msg: msg, Allowed: allowed}
	if f != nil {
		p.File = f.Name
	}
	return p
}
