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
		return nil, readError(path, err, os.Getuid(), os.Getgid())
	}
	return data, nil
}

// readError is ReadFile's error for cause. A file the process may not read
// names the user and group it runs as: a container's numeric user or
// systemd's dynamic one is not the user who installed the file.
func readError(path string, cause error, uid, gid int) error {
	if errors.Is(cause, fs.ErrPermission) {
		return fmt.Errorf("config: cannot read %s: %w (floodgate runs as user %d, group %d: make the file readable by them)", path, cause, uid, gid)
	}
	return fmt.Errorf("config: cannot read %s: %w", path, cause)
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

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlParserErrors are the messages of yaml.v3's parser, which numbers
// lines from 0 (its scanner numbers them from 1). Both name the line where
// the construct they break starts, and none when that is the first line.
var yamlParserErrors = []string{
	"did not find expected <stream-start>", "did not find expected <document start>",
	"did not find expected node content", "did not find expected '-' indicator",
	"did not find expected key", "did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"found undefined tag handle", "found duplicate %YAML directive", "found duplicate %TAG directive",
	"found incompatible YAML document",
}

// yamlBrokenBelow are the errors that yaml.v3 places at the start of the
// scalar, block or list that a later line breaks: that later line is the
// one to fix.
var yamlBrokenBelow = []string{
	"found a tab character that violates indentation",
	"found a tab character where an indentation space is expected",
	"did not find expected '-' indicator",
	"did not find expected key",
}

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
			l.f.envProblem = msg
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
	line, msg := yamlMessage(err)
	if line > 0 && slices.Contains(yamlParserErrors, msg) {
		line++
	}
	start := line // of the broken construct, if known
	if line == 0 || slices.Contains(yamlBrokenBelow, msg) {
		line = firstBrokenLine(data, msg, max(line, 1), line)
	}
	line = min(line, l.lines) // errors at the end of the stream
	switch text := lineText(data, line); {
	case line == 0:
	case strings.HasPrefix(msg, "did not find expected") && quotedThenMore(text) != "":
		msg += ": " + quotedThenMore(text)
	case msg == "mapping values are not allowed in this context":
		msg += ": " + mappingValueHint(data, line, text)
	case strings.Contains(msg, "tab character") || msg == "found character that cannot start any token" && strings.Contains(leadingBlanks(text), "\t"):
		msg += ": indent with spaces, not tabs"
	case msg == "did not find expected key":
		msg += ": this line is indented unlike the keys before it, or is not a key: value"
		if start > 0 && start < line {
			msg += fmt.Sprintf(" (in the block that starts at line %d)", start)
		}
	case msg == "did not find expected '-' indicator":
		msg += ": this line is indented unlike the list's items, or is not an item (- …)"
		if start > 0 && start < line {
			msg += fmt.Sprintf(" of the list that starts at line %d", start)
		}
	case strings.HasPrefix(msg, "did not find expected ',' or") && strings.Contains(text, "${"):
		msg += ` (in [ ] or { }, quote a value that holds "${…}")`
	}
	l.problems = append(l.problems, Problem{File: l.f.Name, Line: line, Msg: "YAML syntax: " + msg})
	l.f.bad[""] = true
}

// keyValue matches a line "key: value" (or a list's "- key: value"),
// capturing the key's indentation with the "- ", the key and the value.
var keyValue = regexp.MustCompile(`^([ ]*(?:-[ ]+)*)([A-Za-z0-9_.-]+):[ ]+(.*)$`)

// quotedThenMore returns a hint when line is "key: value" whose value
// starts with a quote and goes on after the closing one, such as a CEL
// condition written without quotes around it (when: 'x-api-key' in
// request.headers): YAML takes the quoted part for the whole value and
// stops at the rest. It returns "" for any other line.
func quotedThenMore(line string) string {
	m := keyValue.FindStringSubmatch(line)
	if m == nil || m[3] == "" || m[3][0] != '\'' && m[3][0] != '"' {
		return ""
	}
	v, q := strings.TrimRight(m[3], " "), m[3][0]
	end := -1
	for i := 1; i < len(v); i++ {
		if q == '"' && v[i] == '\\' {
			i++ // an escape
			continue
		}
		if v[i] == q {
			if q == '\'' && i+1 < len(v) && v[i+1] == '\'' {
				i++ // '' is a quote inside single quotes
				continue
			}
			end = i
			break
		}
	}
	if end < 0 {
		return ""
	}
	if rest := strings.TrimLeft(v[end+1:], " "); rest == "" || rest[0] == '#' {
		return ""
	}
	fix := "write it as a block: " + m[2] + ": >- and the value on the next line, indented"
	switch {
	case q == '\'' && !strings.ContainsAny(v, `"\`):
		fix = "quote all of it: " + m[2] + `: "` + v + `"`
	case q == '"' && !strings.Contains(v, "'"):
		fix = "quote all of it: " + m[2] + ": '" + v + "'"
	}
	return "the value of " + m[2] + " starts with a quote, so YAML ends it at the closing quote and cannot read the rest; " + fix
}

// mappingValueHint says what usually causes yaml.v3's "mapping values
// are not allowed in this context" at line n, whose text is line: a line
// indented deeper than the key above it, which YAML reads as more of that
// key's value, or a value that holds ": ".
func mappingValueHint(data []byte, n int, line string) string {
	indent := len(line) - len(strings.TrimLeft(line, " "))
	for p := n - 1; p >= 1; p-- {
		prev := lineText(data, p)
		if t := strings.TrimSpace(prev); t == "" || t[0] == '#' {
			continue
		}
		if m := keyValue.FindStringSubmatch(prev); m != nil && indent > len(m[1]) && m[3] != "" &&
			m[3][0] != '#' && m[3][0] != '|' && m[3][0] != '>' {
			return fmt.Sprintf("this line is indented deeper than the key %s on line %d, so YAML reads it as more of that key's value: indent it as that key", m[2], p)
		}
		break
	}
	if m := keyValue.FindStringSubmatch(line); m != nil && strings.Contains(m[3], ": ") {
		return "the value of " + m[2] + ` holds ": ": quote the value, as in ` + m[2] + `: "…"`
	}
	return `a value holds ": " (quote it), or a line is indented deeper than the key above it`
}

// firstBrokenLine returns the first line, from line from on, with which
// data read up to the end of that line already fails to parse with error
// msg: the line that breaks it. yaml.v3 reports where the construct that
// breaks starts, or no line at all for an error of its reader (a control
// character) or of the file's first line. It returns fallback if no line
// does.
func firstBrokenLine(data []byte, msg string, from, fallback int) int {
	ends := lineEnds(data)
	fails := func(n int) bool { return yamlError(data[:ends[n-1]]) == msg }
	// A longer prefix keeps the error a shorter one has. The line is most
	// often a few below from, and each try parses the file up to it:
	// gallop from there, then halve what is left.
	ok, n := from-1, from // data up to line ok parses without the error
	for step := 1; ; step *= 2 {
		if n > len(ends) {
			return fallback
		}
		if fails(n) {
			break
		}
		if n == len(ends) {
			return fallback
		}
		ok, n = n, min(n+step, len(ends))
	}
	for ok+1 < n {
		if mid := ok + (n-ok)/2; fails(mid) {
			n = mid
		} else {
			ok = mid
		}
	}
	return n
}

// yamlError returns the message, without its place, of the first error
// yaml.v3 finds in the documents of data; "" if none.
func yamlError(data []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		switch {
		case err == io.EOF:
			return ""
		case err != nil:
			_, msg := yamlMessage(err)
			return msg
		}
	}
}

// yamlMessage splits a yaml.v3 error into the line it gives, 0 if none,
// and its message.
func yamlMessage(err error) (line int, msg string) {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		return line, err.Error()[len(m[0]):]
	}
	return 0, strings.TrimPrefix(err.Error(), "yaml: ")
}

// leadingBlanks returns the spaces and tabs that start s.
func leadingBlanks(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

// countLines returns the number of lines in data as YAML counts them:
// CR LF, CR, LF, NEL, LS and PS each end a line.
func countLines(data []byte) int { return len(lineEnds(data)) }

// lineEnds returns, for each line of data as YAML counts them (see
// countLines), the offset just past its end and its line break.
func lineEnds(data []byte) []int {
	var ends []int
	for i := 0; i < len(data); i++ {
		switch {
		case data[i] == '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			ends = append(ends, i+1)
		case data[i] == '\n':
			ends = append(ends, i+1)
		case bytes.HasPrefix(data[i:], []byte("\u0085")):
			i++
			ends = append(ends, i+1)
		case bytes.HasPrefix(data[i:], []byte("\u2028")), bytes.HasPrefix(data[i:], []byte("\u2029")):
			i += 2
			ends = append(ends, i+1)
		}
	}
	return append(ends, len(data))
}

// lineText returns 1-based line n of data without its line break, "" if
// there is none.
func lineText(data []byte, n int) string {
	ends := lineEnds(data)
	if n < 1 || n > len(ends) {
		return ""
	}
	start := 0
	if n > 1 {
		start = ends[n-2]
	}
	return strings.TrimRight(string(data[start:ends[n-1]]), "\r\n\u0085\u2028\u2029")
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
