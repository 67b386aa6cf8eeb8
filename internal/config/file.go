package config

import (
	"regexp"
	"slices"
	"strconv"
)

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

	// written is Config as the file wrote it, before anyone applied
	// defaults to it, so that Validate can tell a written 0 or "" from a
	// field left out (see File.keepWrittenZeros).
	written Config

	pos   map[string]Position // field path → place
	unset map[string]bool     // field paths written with a null value
	bad   map[string]bool     // field paths that had load problems
	// missing are the variables the file needs that are unset with no
	// default, in the order first met; missingAt the field paths that
	// refer to each.
	missing   []string
	missingAt map[string][]string
	// envProblem says that the file does not define Env.
	envProblem string
}

// EnvProblem returns what is wrong with Env when the file does not define
// that environment, "" otherwise. Parse stops there, with the problem at
// the file's environments key; whoever chose Env (a command line's --env)
// reports it as a mistake of its own, listing Environments.
func (f *File) EnvProblem() string {
	if f == nil {
		return ""
	}
	return f.envProblem
}

// MissingVariables returns the environment variables the file refers to
// without a default that were not set when it was loaded, in the order
// the file first uses them.
func (f *File) MissingVariables() []string {
	if f == nil {
		return nil
	}
	return slices.Clone(f.missing)
}

// MissingVariableFields returns the field paths ("sessions.secret",
// "upstreams.api.auth.client_secret") whose values refer to the variable
// name, if it is one of MissingVariables; nil otherwise.
func (f *File) MissingVariableFields(name string) []string {
	if f == nil {
		return nil
	}
	return slices.Clone(f.missingAt[name])
}

// A Position is a place in a file: 1-based line and column.
type Position struct {
	Line, Column int
}

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

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// JoinKey appends mapping key k to field path p, as File writes the paths
// of problems: a key of other characters than letters, digits, _ and - is
// quoted in brackets. For stages after loading that place their own.
func JoinKey(p, k string) string { return joinKey(p, k) }

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

// Reported reports whether loading found a problem with the field at
// path or a field that encloses it (the whole file, for a YAML syntax
// error). A later stage's problem there follows from that one: a rule's
// condition whose variable is unset is not also a CEL syntax error.
func (f *File) Reported(path string) bool {
	if f == nil {
		return false
	}
	for {
		if f.bad[path] {
			return true
		}
		if path == "" {
			return false
		}
		path = parentPath(path)
	}
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
