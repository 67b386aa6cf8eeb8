package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// topLevelExtra are the top-level keys that are not Config fields.
var topLevelExtra = []string{"environments"}

type environment struct {
	name string
	doc  *yaml.Node
}

var envName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func envPath(name string) string { return joinKey("environments", name) }

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
				l.report(k, "environments", duplicateKey(k.Value, l.envNode.Line))
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

// merge returns base with overlay over applied, for type t; neither is
// modified. envPath prefixes the paths of problems in the overlay.
func (l *loader) merge(base, over *yaml.Node, t reflect.Type, envPath, path string) *yaml.Node {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(base) && over != nil && addsNamedItems(t) && (over.Kind == yaml.MappingNode || over.Kind == yaml.SequenceNode) {
		// Nothing to change: every name in over is reported.
		base = &yaml.Node{Kind: over.Kind, Tag: over.Tag, Line: over.Line, Column: over.Column}
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
				l.merge(nil, v, ft, envPath, joinKey(path, k.Value)) // reports every name
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
			if isNull(v) && t.Kind() == reflect.Map && !isNull(m.Content[j+1]) {
				// An entry of a map (a plan, a query cap, an upstream):
				// ~ would leave the name with nothing, silently (a plan
				// without limits exempts its clients, a cap of 0 refuses
				// the parameter).
				l.report(k, concatPath(envPath, joinKey(path, k.Value)), fmt.Sprintf(
					"~ would remove %s's entry %q; an environment changes an entry but cannot remove one", path, k.Value))
				continue
			}
			if isNull(v) && addsNamedItems(ft) && !isNull(m.Content[j+1]) {
				// Merged by name, so an environment cannot remove the
				// items; ~ would remove them all, silently.
				l.report(k, concatPath(envPath, joinKey(path, k.Value)), fmt.Sprintf(
					"~ would remove every %s the base defines; an environment changes them by name but cannot add or remove them",
					itemNoun(k.Value)))
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
		if item.Kind != yaml.MappingNode && !isNull(item) {
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

// itemNoun names one item of the field called key that environments
// merge by name, for messages.
func itemNoun(key string) string {
	switch key {
	case "rules", "routes", "upstreams", "plans":
		return strings.TrimSuffix(key, "s")
	case "route_groups":
		return "route group"
	case "params":
		return "parameter constraint"
	case "max":
		return "query cap"
	}
	return "entry of " + key
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
