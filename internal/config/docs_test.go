package config

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/clientip"
)

// TestReferenceDocumentsEveryField: docs/configuration.md has a
// row for every field of Config, so that the reference cannot fall
// behind the code.
func TestReferenceDocumentsEveryField(t *testing.T) {
	data, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, path string) {
		for _, name := range fieldNames(typ) {
			f := yamlFields(typ)[name]
			p := name
			if path != "" {
				p = path + "." + name
			}
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, p)
				continue
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p+"[]")
				continue
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p+".NAME")
				continue
			}
			if !strings.Contains(doc, "| `"+p+"` |") {
				t.Errorf("docs/configuration.md has no row for `%s`", p)
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
}

// TestReferenceExamples: the YAML examples in the reference load without
// problems, and the complete one (the last) validates.
func TestReferenceExamples(t *testing.T) {
	data, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(data), "```yaml\n")[1:]
	if len(blocks) < 2 {
		t.Fatalf("found %d YAML examples, want at least 2", len(blocks))
	}
	for i, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		f, err := Parse("example.yaml", []byte(b), "", nil)
		if err != nil {
			t.Errorf("example %d:\n%s\n%v", i, b, err)
			continue
		}
		if i == len(blocks)-1 {
			if probs := f.Validate(); len(probs) > 0 {
				t.Errorf("complete example:\n%v", probs)
			}
			// What validate warns about, from the settings as written.
			ci := f.Config.ClientIP
			trusted, err := clientip.ParsePrefixes(ci.TrustedProxies)
			if err != nil {
				t.Fatalf("complete example: %v", err)
			}
			o := clientip.Options{TrustedProxies: trusted, TrustedHops: ci.TrustedHops, Header: ci.Header, IPv4Prefix: ci.IPv4Prefix, IPv6Prefix: ci.IPv6Prefix}
			if w := clientip.Warnings(o); len(w) > 0 {
				t.Errorf("complete example: validate warns:\n%s", strings.Join(w, "\n"))
			}
		}
	}
}
