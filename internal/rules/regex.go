package rules

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// CEL's matches() with a constant pattern, compiled once at load (as
// cel-go's own optimisation does) and guarded by a literal prefilter: most
// patterns in rules name words that must appear in any match
// ('/(scores|counts)/?$', '(?i)(GPTBot|CCBot)'), and most requests contain
// none of them. Checking for those words first is a few substring searches;
// Go's regexp would otherwise try the pattern at every position of the
// path or user agent (a backtracking search: half of a MaveDB rule set's
// evaluation time). A request that contains one of the words gets the full
// regular expression, so results never change (FuzzPrefilter checks).
var regexOptions = func() []cel.ProgramOption {
	var opts []*interpreter.RegexOptimization
	for _, id := range []string{overloads.Matches, overloads.MatchesString} {
		opts = append(opts, &interpreter.RegexOptimization{
			Function: overloads.Matches, OverloadID: id, RegexIndex: 1, Factory: matchesFactory,
		})
	}
	return []cel.ProgramOption{cel.OptimizeRegex(opts...)}
}()

func matchesFactory(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	m, err := newMatcher(pattern)
	if err != nil {
		return nil, err
	}
	if len(call.Args()) != 2 {
		return nil, fmt.Errorf("matches: %d arguments, want 2", len(call.Args()))
	}
	return &matchesCall{InterpretableCall: call, in: call.Args()[0], m: m}, nil
}

// matchesCall evaluates s.matches(<constant pattern>) with the pattern
// compiled once: only s is evaluated, and nothing is allocated (CEL's
// generic call would build an argument slice and box the string).
type matchesCall struct {
	interpreter.InterpretableCall // ID, Function, OverloadID, Args: the call's
	in                            interpreter.InterpretableV2
	m                             *matcher
}

func (c *matchesCall) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	return c.match(c.in.Exec(frame))
}
func (c *matchesCall) Eval(act interpreter.Activation) ref.Val { return c.match(c.in.Eval(act)) }

func (c *matchesCall) match(v ref.Val) ref.Val {
	s, ok := v.(types.String)
	if !ok {
		if types.IsUnknownOrError(v) {
			return v
		}
		return types.NoSuchOverloadErr()
	}
	return types.Bool(c.m.MatchString(string(s)))
}

// matcher is a compiled pattern with its prefilter.
type matcher struct {
	re *regexp.Regexp
	pf *prefilter // nil: none
}

func newMatcher(pattern string) (*matcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return &matcher{re: re, pf: newPrefilter(pattern)}, nil
}

// MatchString reports whether s matches, as regexp.MatchString does.
func (m *matcher) MatchString(s string) bool {
	if m.pf != nil && !m.pf.mayMatch(s) {
		return false
	}
	return m.re.MatchString(s)
}

// prefilter holds words one of which appears in every match of a pattern.
type prefilter struct {
	words []string // lower case when fold
	fold  bool     // ASCII case-insensitive
}

// Bounds of a prefilter: more words, or shorter ones, cost about what
// they save.
const (
	maxPrefilterWords   = 32
	minPrefilterWordLen = 2
	// maxFoldInput bounds the input lower-cased on the stack for a
	// case-insensitive prefilter; longer inputs skip it.
	maxFoldInput = 512
)

// newPrefilter returns the prefilter of pattern, or nil when none helps.
func newPrefilter(pattern string) *prefilter {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	words, fold, ok := required(re.Simplify())
	if !ok || len(words) == 0 || len(words) > maxPrefilterWords {
		return nil
	}
	for i, w := range words {
		if len(w) < minPrefilterWordLen {
			return nil
		}
		if fold {
			for j := 0; j < len(w); j++ {
				if w[j] >= utf8.RuneSelf {
					return nil // only ASCII folds here
				}
			}
			words[i] = strings.ToLower(w)
		}
	}
	return &prefilter{words: words, fold: fold}
}

// required returns words one of which appears in every string re matches,
// and whether they must be compared ignoring ASCII case. ok is false when
// no such set is known.
func required(re *syntax.Regexp) (words []string, fold, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		fold = re.Flags&syntax.FoldCase != 0
		for _, r := range re.Rune {
			// U+FFFD also matches any byte that is not UTF-8 (Go's
			// regexp decodes one so): the input need not hold its bytes.
			if r == utf8.RuneError || fold && r >= utf8.RuneSelf {
				return nil, false, false
			}
		}
		return []string{string(re.Rune)}, fold, true
	case syntax.OpCapture:
		return required(re.Sub[0])
	case syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		// The factor whose shortest word is longest.
		best, bestLen := -1, 0
		var bestWords []string
		var bestFold bool
		for i, sub := range re.Sub {
			w, f, ok := required(sub)
			if !ok {
				continue
			}
			shortest := len(w[0])
			for _, s := range w {
				shortest = min(shortest, len(s))
			}
			if shortest > bestLen {
				best, bestLen, bestWords, bestFold = i, shortest, w, f
			}
		}
		if best >= 0 {
			return bestWords, bestFold, true
		}
	case syntax.OpAlternate:
		for _, sub := range re.Sub {
			w, f, ok := required(sub)
			if !ok {
				return nil, false, false
			}
			words = append(words, w...)
			fold = fold || f
		}
		// Mixed: compare every word ignoring case, which only admits more.
		return words, fold, true
	}
	return nil, false, false
}

// mayMatch reports whether s contains one of the words: false means the
// pattern cannot match s.
func (p *prefilter) mayMatch(s string) bool {
	if p.fold {
		// Non-ASCII input skips the prefilter: under (?i), k and s also
		// match the Kelvin sign and the long s.
		if len(s) > maxFoldInput {
			return true
		}
		var buf [maxFoldInput]byte
		b := buf[:len(s)]
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c >= utf8.RuneSelf {
				return true
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		for _, w := range p.words {
			if bytesContains(b, w) {
				return true
			}
		}
		return false
	}
	for _, w := range p.words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func bytesContains(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		if b[i] == w[0] && string(b[i:i+len(w)]) == w {
			return true
		}
	}
	return false
}
