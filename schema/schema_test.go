package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/config"
)

const schemaURL = "https://github.com/floodgate/floodgate/schema/floodgate.schema.json"

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSON))
	if err != nil {
		t.Fatalf("floodgate.schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		t.Fatalf("compile floodgate.schema.json: %v", err)
	}
	return sch
}

// instance reads YAML as the JSON value a YAML language server checks.
func instance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("yaml to json: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestExamplesMatchSchema: every example, as written (before variables are
// expanded), and every valid config fixture passes the schema.
func TestExamplesMatchSchema(t *testing.T) {
	sch := compile(t)
	examples, _ := filepath.Glob("../examples/*.yaml")
	fixtures, _ := filepath.Glob("../internal/config/testdata/valid/*.yaml")
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	for _, path := range append(examples, fixtures...) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(instance(t, data)); err != nil {
			t.Errorf("%s does not match the schema:\n%v", path, err)
		}
	}
}

// TestSchemaRejects: the schema is not vacuous; each change to a valid
// document makes it invalid.
func TestSchemaRejects(t *testing.T) {
	sch := compile(t)
	const valid = `
upstreams:
  api:
    url: http://127.0.0.1:8081
rules:
  - name: per-ip
    action: block
    limits: [100/5m]
`
	if err := sch.Validate(instance(t, []byte(valid))); err != nil {
		t.Fatalf("valid document rejected: %v", err)
	}
	tests := []struct {
		name, old, new string
	}{
		{name: "unknown top-level key", old: "upstreams:", new: "bogus: 1\nupstreams:"},
		{name: "unknown rule key", old: "action: block", new: "action: block\n    limts: [1/s]"},
		{name: "bad action", old: "action: block", new: "action: blok"},
		{name: "malformed limit", old: "100/5m", new: "100/5 minutes"},
		{name: "count not a number", old: "100/5m", new: "abc/5m"},
		{name: "missing rule name", old: "- name: per-ip\n    action", new: "- action"},
		{name: "bad upstream name", old: "api:", new: "API:"},
		{name: "ftp upstream", old: "http://", new: "ftp://"},
		{name: "bad key", old: "action: block", new: "action: block\n    key: [cookie]"},
		{name: "mode", old: "upstreams:", new: "mode: shadow\nupstreams:"},
		{name: "unknown key in an environment", old: "upstreams:", new: "environments:\n  prod:\n    modee: enforce\nupstreams:"},
	}
	for _, tt := range tests {
		doc := strings.Replace(valid, tt.old, tt.new, 1)
		if doc == valid {
			t.Fatalf("%s: %q not in the document", tt.name, tt.old)
		}
		if err := sch.Validate(instance(t, []byte(doc))); err == nil {
			t.Errorf("%s: schema accepts\n%s", tt.name, doc)
		}
	}
}

// TestSchemaMatchesConfig: every yaml-tagged field of config.Config, at
// any depth, is a property of the schema, and every property is a field;
// each has a description. The overlay of an environment has the same
// fields, less environments.
func TestSchemaMatchesConfig(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(JSON, &root); err != nil {
		t.Fatal(err)
	}
	defs := root["$defs"].(map[string]any)
	w := walker{t: t, defs: defs}
	cfg := reflect.TypeFor[config.Config]()
	w.object(cfg, root, "", "environments")
	w.object(cfg, defs["overlay"].(map[string]any), "environments.NAME")
}

type walker struct {
	t    *testing.T
	defs map[string]any
}

// deref follows a "#/$defs/NAME" reference.
func (w walker) deref(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		s = w.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	}
}

// object checks struct type t against object schema s; extra are
// properties of s that are not fields of t.
func (w walker) object(t reflect.Type, s map[string]any, path string, extra ...string) {
	s = w.deref(s)
	if s["additionalProperties"] != false {
		w.t.Errorf("%s: additionalProperties is not false", or(path, "root"))
	}
	props, _ := s["properties"].(map[string]any)
	var fields []string
	for _, f := range reflect.VisibleFields(t) {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields = append(fields, name)
		p := join(path, name)
		ps, ok := props[name].(map[string]any)
		if !ok {
			w.t.Errorf("%s: field %s.%s is not in the schema", p, t.Name(), f.Name)
			continue
		}
		if desc, _ := w.deref(ps)["description"].(string); desc == "" {
			if desc, _ = ps["description"].(string); desc == "" {
				w.t.Errorf("%s: no description in the schema", p)
			}
		}
		w.value(f.Type, ps, p)
	}
	for name := range props {
		if !slices.Contains(fields, name) && !slices.Contains(extra, name) {
			w.t.Errorf("%s: schema property is not a field of %s", join(path, name), t.Name())
		}
	}
}

// value descends into the schema of a field of type t.
func (w walker) value(t reflect.Type, s map[string]any, path string) {
	s = w.deref(s)
	switch {
	case t.Kind() == reflect.Struct:
		w.object(t, s, path)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		w.object(t.Elem(), s["items"].(map[string]any), path+"[]")
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct:
		w.object(t.Elem(), s["additionalProperties"].(map[string]any), path+".NAME")
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
