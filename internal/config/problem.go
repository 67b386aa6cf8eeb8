package config

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// A Problem is one thing wrong with a configuration file: where it is,
// which field, what is wrong and, when the set is closed, what is allowed.
type Problem struct {
	// File is the file's name as given to Load or Parse.
	File string
	// Line is the 1-based line of the field, or 0 when the problem has no
	// place in the file (the file is too large, a required section is
	// missing from an empty file).
	Line int
	// Field is the field path, such as "rules[2].limits[0]" (see File.Line);
	// empty for problems of the file as a whole, such as YAML syntax errors.
	Field string
	// Msg says what is wrong, lower-case, without the field.
	Msg string
	// Allowed lists the values or keys that would be accepted, if the set
	// is closed and short.
	Allowed []string
}

// Error formats p as "file:line: field: problem (allowed: a, b)", leaving
// out the parts that p does not have.
func (p Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	} else if p.Line > 0 {
		b.WriteString("line ")
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	// A value quoted back may be a URL with its password: the problems
	// are printed and logged (a rejected reload).
	b.WriteString(MaskURLCredentials(p.Msg))
	if len(p.Allowed) > 0 {
		b.WriteString(" (allowed: ")
		b.WriteString(strings.Join(p.Allowed, ", "))
		b.WriteByte(')')
	}
	return b.String()
}

// Problems is every problem found in a configuration, from any stage:
// loading, Validate, and later stages (such as compiling rule conditions)
// that append their own with File.Problem. Its Error lists them one per
// line, sorted by line then field; the slice itself is left in the order
// it was built.
type Problems []Problem

// Error formats every problem, one per line, sorted by line then field.
func (ps Problems) Error() string {
	sorted := slices.Clone(ps)
	sorted.Sort()
	lines := make([]string, len(sorted))
	for i, p := range sorted {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Sort orders ps by file, line, then field; problems at the same place keep
// their order.
func (ps Problems) Sort() {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Field, b.Field),
		)
	})
}

// Err returns ps as an error, or nil when there are none, so that an empty
// Problems never becomes a non-nil error.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}
