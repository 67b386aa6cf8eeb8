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
