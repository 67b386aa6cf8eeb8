package layers

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/floodgate/floodgate"

// readLayers reads the layer table of docs/architecture.md: the rows of
// the table under "What may import what" whose first cell is a number,
// each naming packages in backquotes.
func readLayers(r io.Reader) (map[string]int, error) {
	layers := map[string]int{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line[3:]) == "What may import what"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 2 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(cells[0]))
		if err != nil {
			continue // the header and its rule
		}
		for _, f := range strings.Fields(cells[1]) {
			name := strings.Trim(f, "`")
			if name == "" || name == f {
				return nil, errors.New("layer " + cells[0] + ": " + f + " is not a `package`")
			}
			if prev, dup := layers[name]; dup {
				return nil, errors.New(name + " is on layers " + strconv.Itoa(prev) + " and " + strconv.Itoa(n))
			}
			layers[name] = n
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, errors.New(`no layer table under "## What may import what"`)
	}
	return layers, nil
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// TestLayers checks every package of the module (bench/ aside) against
// the table: each is listed, and each imports only module packages of
// lower layers. Test files are not checked: a test may import what it
// needs.
func TestLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	f, err := os.Open(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layers, err := readLayers(f)
	if err != nil {
		t.Fatalf("docs/architecture.md: %v", err)
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if name == "bench" || strings.HasPrefix(name, "bench/") || name == "internal/layers" {
			continue
		}
		seen[name] = true
		own, ok := layers[name]
		if !ok {
			t.Errorf("%s has no layer: add it to the table in docs/architecture.md", name)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			l, ok := layers[dep]
			switch {
			case !ok:
				// Reported as the package's own missing layer.
			case l >= own:
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers (docs/architecture.md)", name, own, dep, l)
			}
		}
	}
	for name := range layers {
		if !seen[name] {
			t.Errorf("docs/architecture.md lists %s, which is not a package of the module", name)
		}
	}
}

func TestReadLayers(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      map[string]int
		bad       bool
	}{
		{name: "table", doc: "# A\n## What may import what\n| layer | packages |\n|---:|---|\n| 0 | `a` `b/c` |\n| 1 | `d` |\n## Next\n| 2 | `e` |\n",
			want: map[string]int{"a": 0, "b/c": 0, "d": 1}},
		{name: "no table", doc: "## What may import what\ntext\n", bad: true},
		{name: "twice", doc: "## What may import what\n| 0 | `a` |\n| 1 | `a` |\n", bad: true},
		{name: "bare name", doc: "## What may import what\n| 0 | a |\n", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLayers(strings.NewReader(tc.doc))
			if tc.bad {
				if err == nil {
					t.Fatalf("no error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s: layer %d, want %d", k, got[k], v)
				}
			}
		})
	}
}
