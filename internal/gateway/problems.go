package gateway

import (
	"errors"
	"strconv"
	"strings"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/respond"
)

// compileProblems collects the problems New finds after Validate, while
// compiling: conditions, answers, sessions, credentials. Each is one
// line at its field, as Validate's are, and none is about a field that
// loading or Validate already found wrong: compiling a field that is
// wrong fails too, and would only say the same thing again, in the words
// of the package that compiled it.
type compileProblems struct {
	f *config.File
	// validated are the fields of Validate's problems.
	validated []string
	problems  config.Problems
}

func newCompileProblems(f *config.File, validated config.Problems) *compileProblems {
	c := &compileProblems{f: f}
	for _, p := range validated {
		if p.Field != "" {
			c.validated = append(c.validated, p.Field)
		}
	}
	return c
}

// reported reports whether an earlier stage found a problem with the
// field at path: loading (File.Reported: the field or one enclosing it),
// or Validate, with the field, one enclosing it, or one within it. A
// problem compiling a whole (upstreams.api.auth, a rule's answers) that
// Validate found a part of wrong (its client_secret, its name) follows
// from that part.
func (c *compileProblems) reported(path string) bool {
	if c.f.Reported(path) {
		return true
	}
	for _, v := range c.validated {
		if within(path, v) || within(v, path) {
			return true
		}
	}
	return false
}

// within reports whether the field at path is the one at outer or inside
// it: "rules[0].name" is within "rules[0]", "rules[10]" is not.
func within(path, outer string) bool {
	if !strings.HasPrefix(path, outer) {
		return false
	}
	rest := path[len(outer):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// add records err as problems with the field at path, one for each
// error err joins and each line of those, unless the field was reported.
func (c *compileProblems) add(path string, err error) {
	if err == nil || c.reported(path) {
		return
	}
	for _, e := range leaves(err) {
		for line := range strings.SplitSeq(e.Error(), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				c.problems = append(c.problems, c.f.Problem(path, line))
			}
		}
	}
}

// addProblems records problems another stage made (rules.Compile), but
// those of fields already reported, one line each.
func (c *compileProblems) addProblems(ps config.Problems) {
	for _, p := range ps {
		if c.reported(p.Field) {
			continue
		}
		for line := range strings.SplitSeq(p.Msg, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				p.Msg = line
				c.problems = append(c.problems, p)
			}
		}
	}
}

// addMessage records the problems of rule i's message: each at the
// field of its text (rules[i].message.pt-BR, or rules[i].message for the
// single string), so that a problem Validate found with a text's tag is
// not given again.
func (c *compileProblems) addMessage(i int, err error) {
	for _, e := range leaves(err) {
		path := rulePath(i, "message")
		if me, ok := errors.AsType[*respond.MessageError](e); ok {
			if me.Tag != "" {
				path = config.JoinKey(path, me.Tag)
			}
			e = me.Err
		}
		c.add(path, e)
	}
}

// ruleFields are the fields of a rule by the respond.RuleSpec field made
// of them.
var ruleFields = map[string]string{"Name": "name", "RetryAfter": "retry_after", "Message": "message", "Limits": "limits"}

// addRule records the problems of rule i's answers (respond.NewRule): at
// the field they are about, else at the rule, which a problem Validate
// found with any of its fields then covers (policies are named from the
// rule's name and windows). One that another field makes (a message's
// {limit} and the limits) is left out when that field was reported.
func (c *compileProblems) addRule(i int, err error) {
	for _, e := range leaves(err) {
		path := rulePath(i, "")
		if se, ok := errors.AsType[*respond.SpecError](e); ok && ruleFields[se.Field] != "" {
			path = rulePath(i, ruleFields[se.Field])
			if from := ruleFields[se.From]; from != "" && c.reported(rulePath(i, from)) {
				continue
			}
		}
		c.add(path, e)
	}
}

// rulePath is the path of field of rules[i].
func rulePath(i int, field string) string {
	p := "rules[" + strconv.Itoa(i) + "]"
	if field != "" {
		p += "." + field
	}
	return p
}

// leaves returns the errors err joins (errors.Join), recursively, or err
// alone; none for nil.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, leaves(e)...)
	}
	return out
}
