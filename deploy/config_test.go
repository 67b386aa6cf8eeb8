package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/cli"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/schema"
)

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`)

// loadConfig runs `floodgate validate` in this process on file, with
// exactly the variables in vars set of those the file names, and returns
// the configuration as serve loads it, defaults applied. A file that
// does not validate fails the test with validate's report.
func loadConfig(t *testing.T, file string, vars map[string]string) *config.Config {
	t.Helper()
	data := readFile(t, file)
	matchesSchema(t, file, data)
	for _, m := range varRef.FindAllSubmatch(data, -1) {
		name := string(m[1])
		t.Setenv(name, "") // restored after the test
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
	for k, v := range vars {
		t.Setenv(k, v)
	}
	var stdout, stderr bytes.Buffer
	if code := cli.Run(context.Background(), []string{"validate", "--config", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("floodgate validate --config %s with %v: exit %d\n%s", file, vars, code, stderr.Bytes())
	}
	f, err := config.Load(file, "", func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatalf("load %s: %v", file, err)
	}
	f.Config.ApplyDefaults()
	return &f.Config
}

// noVars expands compose's ${VAR:-default} references (the same forms as
// floodgate's) as when nothing is set.
func noVars(t *testing.T, s string) string {
	t.Helper()
	v, err := config.Expand(s, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("expand %q: %v", s, err)
	}
	return v
}

// matchesSchema checks a configuration as written, variables and all,
// against schema/floodgate.schema.json, as an editor does.
func matchesSchema(t *testing.T, file string, data []byte) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.JSON))
	if err != nil {
		t.Fatal(err)
	}
	const url = "https://github.com/floodgate/floodgate/schema/floodgate.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s does not match schema/floodgate.schema.json:\n%v", file, err)
	}
}
