package config

import (
	"errors"
	"testing"
)

func TestProblemError(t *testing.T) {
	tests := []struct {
		p    Problem
		want string
	}{
		{
			p:    Problem{File: "a.yaml", Line: 12, Field: "rules[1].action", Msg: `unknown action "blok"`, Allowed: []string{"block", "deny"}},
			want: `a.yaml:12: rules[1].action: unknown action "blok" (allowed: block, deny)`,
		},
		{p: Problem{File: "a.yaml", Line: 3, Field: "mode", Msg: "bad"}, want: "a.yaml:3: mode: bad"},
		{p: Problem{File: "a.yaml", Field: "upstreams", Msg: "missing"}, want: "a.yaml: upstreams: missing"},
		{p: Problem{File: "a.yaml", Line: 7, Msg: "YAML syntax: x"}, want: "a.yaml:7: YAML syntax: x"},
		{p: Problem{Line: 7, Field: "mode", Msg: "bad"}, want: "line 7: mode: bad"},
		{p: Problem{Field: "mode", Msg: "bad"}, want: "mode: bad"},
	}
	for _, tt := range tests {
		if got := tt.p.Error(); got != tt.want {
			t.Errorf("%+v.Error() = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// TestProblemsMerge: problems of later stages, made with File.Problem from
// a field path only, sort in among the loader's.
func TestProblemsMerge(t *testing.T) {
	doc := "upstreams:\n  api:\n    url: http://127.0.0.1:8081\nrules:\n  - name: a\n    when: request.nope\n    limits: [100/5m]\n  - name: b\n    limits: [abc/5m]\n"
	f, err := Parse("m.yaml", []byte(doc), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	probs := f.Validate()
	probs = append(probs,
		f.Problem("rules[0].when", "undefined field 'nope'"),
		f.Problem("rules[1].key[0]", "from a later stage"), // not in the file: the rule's line
		f.Problem("", "a problem of the whole file"),
	)
	want := `m.yaml: a problem of the whole file
m.yaml:6: rules[0].when: undefined field 'nope'
m.yaml:8: rules[1].key[0]: from a later stage
m.yaml:9: rules[1].limits[0]: limit "abc/5m": count "abc" is not a positive integer`
	if got := probs.Error(); got != want {
		t.Errorf("Problems.Error() =\n%s\nwant\n%s", got, want)
	}
	if probs[0].Field != "rules[1].limits[0]" {
		t.Errorf("Problems.Error sorted the slice itself: %v", probs[0])
	}
	var err2 error = probs
	var back Problems
	if !errors.As(err2, &back) || len(back) != 4 {
		t.Errorf("errors.As(Problems) = %v", back)
	}
}

func TestProblemsErr(t *testing.T) {
	if err := Problems(nil).Err(); err != nil {
		t.Errorf("Problems(nil).Err() = %v, want nil", err)
	}
	if err := (Problems{{Msg: "x"}}).Err(); err == nil {
		t.Error("Problems{…}.Err() = nil, want an error")
	}
}
