package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest configuration file Load and Parse accept.
const MaxFileSize = 4 << 20

// maxAliasNodes bounds the nodes that YAML aliases may add to a document,
// beyond the ones it has, so that a "billion laughs" document is refused
// instead of expanded.
const maxAliasNodes = 10000

// Load reads the configuration file at path, applies the environment env
// (see Parse) and expands variables with lookup.
//
// The error is Problems when the file could be read; the File is then
// returned too, with what could be decoded, so that its Validate can add
// its own problems (it leaves out fields that already have one). Other
// errors (the file cannot be read) come with a nil File.
func Load(path, env string, lookup func(string) (string, bool)) (*File, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, env, lookup)
}

// ReadFile reads the configuration file at path, at most MaxFileSize+1
// bytes (Parse reports a larger file). Its error is one line naming the
// file and what is wrong with it ("config: cannot read nope.yaml: no such
// file or directory"), and wraps the cause (errors.Is(err,
// fs.ErrNotExist)).
func ReadFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
		fh.Close()
	}
	if err != nil {
		// The path error would repeat the path and name the system call
		// ("open nope.yaml: …"): keep its cause only.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("config: cannot read %s: %w", path, err)
	}
	return data, nil
}

// Parse reads a configuration from data; name is used in problems.
//
// The top-level "environments" mapping, if any, maps environment names to
// partial documents. When env is not empty, that environment is applied
// to the base settings (everything but "environments"): mappings are
// merged key by key; lists of named items (routes, rules) are merged item
// by item by name, and may only change items the base defines, never add
// or remove them (so null over them is a problem); any other value
// replaces the base's, null unsetting it. Then ${VAR} references in scalar values are
// expanded with lookup (see Expand).
//
// Parse reports every problem it finds at once: YAML syntax, unknown and
// duplicate keys (in every environment, applied or not), values of the
// wrong type, and variable references. It always returns a File; after a
// problem that stops loading (a syntax error, an unknown environment) its
// Config is empty and its Validate adds nothing.
func Parse(name string, data []byte, env string, lookup func(string) (string, bool)) (*File, error) {
	l := &loader{
		f:      &File{Name: name, Env: env, pos: map[string]Position{}, unset: map[string]bool{}, bad: map[string]bool{}},
		lookup: lookup,
	}
	l.load(data)
	l.f.written = l.f.Config.clone()
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
	if msg == "did not find expected key" && line > 0 {
		// yaml.v3 gives the line where the block begins, not the line
		// that breaks it (often a few lines below).
		msg += " in the block that starts here: a line in it is indented unlike the keys beside it, or is not a key: value"
	}
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
