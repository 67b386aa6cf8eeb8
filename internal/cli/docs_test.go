package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestProductionDocCommands runs, in order and in an empty directory,
// the floodgate init, validate and explain commands that docs/production.md
// and the README's "Protect your own API" section show in their sh blocks: each
// must exit 0, so the way to production the docs describe works as
// written.
func TestProductionDocCommands(t *testing.T) {
	own := regexp.MustCompile(`^floodgate (init|validate|explain)( |$)`)
	for _, tc := range []struct{ doc, section string }{
		{"../../docs/production.md", ""},
		{"../../README.md", "## Protect your own API"},
	} {
		doc := tc.doc
		t.Run(filepath.Base(doc), func(t *testing.T) {
			data, err := os.ReadFile(doc)
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			if tc.section != "" {
				_, after, ok := strings.Cut(text, "\n"+tc.section+"\n")
				if !ok {
					t.Fatalf("%s has no section %q", doc, tc.section)
				}
				text, _, _ = strings.Cut(after, "\n## ")
			}
			var commands []string
			inSh := false
			for _, line := range strings.Split(text, "\n") {
				switch {
				case line == "```sh":
					inSh = true
				case strings.HasPrefix(line, "```"):
					inSh = false
				case inSh && own.MatchString(line):
					commands = append(commands, line)
				}
			}
			seen := map[string]bool{}
			for _, c := range commands {
				seen[strings.Fields(c)[1]] = true
			}
			if !seen["init"] || !seen["validate"] || (doc == "../../docs/production.md" && !seen["explain"]) {
				t.Fatalf("%s shows %q: want init, validate and explain", doc, commands)
			}
			t.Chdir(t.TempDir())
			for _, c := range commands {
				args, err := shellWords(c)
				if err != nil {
					t.Fatalf("%s: %q: %v", doc, c, err)
				}
				if code, _, stderr := run(t, nil, args[1:]...); code != 0 {
					t.Errorf("%s: %q: exit code %d; stderr:\n%s", doc, c, code, stderr)
				}
			}
		})
	}
}

// shellWords splits a documented command line as sh would, for the forms
// the docs use: words, 'single-quoted' words and a trailing # comment.
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			cur.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words, nil
		case strings.ContainsRune("$`\"|&;<>()\\", r):
			return nil, errUnsupported(r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, errUnsupported('\'')
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

type errUnsupported rune

func (e errUnsupported) Error() string {
	return "the test's splitter does not take " + string(rune(e)) + ": write the command without it"
}

// TestDocumentedCommandsExist checks that every floodgate command the docs,
// the README and the shipped alerts name — in a code span, at the start of
// a shell line, or as a saved query of floodgate logs — is one the binary
// has: an alert that sends its reader to a command that does not exist
// fails them when it fires.
func TestDocumentedCommandsExist(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	for _, dir := range []string{"../../deploy", "../../examples"} {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && (strings.HasSuffix(path, ".yml") || strings.HasSuffix(path, ".yaml")) {
				files = append(files, path)
			}
			return nil
		})
	}
	if len(files) < 10 {
		t.Fatalf("found only %d files to check", len(files))
	}
	queries := map[string]bool{}
	for _, q := range strings.Split(strings.Fields(logsSynopsis)[0], "|") {
		queries[q] = true
	}
	command := regexp.MustCompile("`floodgate ([a-z][a-z-]*)|(?m)^(?:\\$ )?floodgate ([a-z][a-z-]*)")
	query := regexp.MustCompile(`floodgate logs ([a-z]+-[a-z-]+)`)
	named := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, block := range codeBlocks(string(data)) {
			for _, m := range command.FindAllStringSubmatch(block, -1) {
				named++
				if name := m[1] + m[2]; commands[name].run == nil {
					t.Errorf("%s names %q: floodgate has no command %s", f, m[0], name)
				}
			}
		}
		for _, m := range query.FindAllStringSubmatch(string(data), -1) {
			if !queries[m[1]] {
				t.Errorf("%s names %q: floodgate logs has no query %s", f, m[0], m[1])
			}
		}
	}
	if named < 20 {
		t.Errorf("only %d commands named across %d files: the pattern finds nothing", named, len(files))
	}
}

// codeBlocks returns the text of a Markdown file's shell and console code
// blocks, and the rest of it with the blocks left out (where only code
// spans name commands); a YAML file is returned whole.
func codeBlocks(text string) []string {
	var code, prose strings.Builder
	inBlock, inCode := false, false
	for line := range strings.Lines(text) {
		switch {
		case strings.HasPrefix(line, "```"):
			inBlock = !inBlock
			inCode = inBlock && (strings.HasPrefix(line, "```sh") || strings.HasPrefix(line, "```console") || line == "```\n")
		case inCode:
			code.WriteString(line)
		case inBlock:
		default:
			prose.WriteString(strings.ReplaceAll(line, "\n", " "))
		}
	}
	return []string{code.String(), strings.Join(strings.Fields(prose.String()), " ")}
}
