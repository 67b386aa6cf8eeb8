package report

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/logs/query"
)

// hostile are strings a client can put into a log (a request path, a
// User-Agent) or a crafted log can hold anywhere, and what a table shows
// for each.
var hostile = []struct{ in, want string }{
	{"/a\x1b]0;owned\x07\x1b[2J\r\nX", `/a\x1b]0;owned\a\x1b[2J\r\nX`}, // title, clear screen, a fake row
	{"col\tumn", `col\tumn`},
	{"\x1b[1A\x1b[2K", `\x1b[1A\x1b[2K`}, // cursor up, erase line
	{"\u009b2J", `\u009b2J`},             // the one-byte CSI
	{"\u202eevil.exe", `\u202eevil.exe`}, // right-to-left override
	{"zero\u200bwidth", `zero\u200bwidth`},
	{"bell\x07 del\x7f nul\x00", `bell\a del\x7f nul\x00`},
	{"\xff\xfe not UTF-8 \xc3", `\xff\xfe not UTF-8 \xc3`},
	{`C:\path\x1b`, `C:\\path\\x1b`}, // a backslash is not an escape's start
	{"café ☕ 日本 ü", "café ☕ 日本 ü"},
	{"/api/v1/score-sets/urn:mavedb:1/scores?x=1&y=%20", "/api/v1/score-sets/urn:mavedb:1/scores?x=1&y=%20"},
}

func TestText(t *testing.T) {
	for _, tc := range append(hostile, struct{ in, want string }{"", ""}) {
		got := text(tc.in)
		if got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
		checkShown(t, fmt.Sprintf("text(%q)", tc.in), got)
		checkReadsBack(t, tc.in, got)
	}
}

// checkShown fails if out holds anything a terminal would act on rather
// than show: every rune must be printable, or a newline between rows.
func checkShown(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: not UTF-8: %q", what, out)
		return
	}
	for _, r := range out {
		if r != '\n' && !unicode.IsPrint(r) {
			t.Errorf("%s: shows %U:\n%q", what, r, out)
			return
		}
	}
}

// checkReadsBack fails if shown does not read back, as a Go string
// literal, to the logged in.
func checkReadsBack(t *testing.T, in, shown string) {
	t.Helper()
	back, err := strconv.Unquote(`"` + strings.ReplaceAll(shown, `"`, `\"`) + `"`)
	if err != nil || back != in {
		t.Errorf("text(%q) = %q reads back as %q, %v", in, shown, back, err)
	}
}

// poison sets every string reachable from v (fields, slices, map values)
// to s.
func poison(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			poison(v.Elem(), s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				poison(v.Field(i), s)
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			poison(v.Index(i), s)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			poison(e, s)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString(s)
	}
}

// tables renders every text table, from real results with every string
// in them set to s.
func tables(t testing.TB, s string) map[string]string {
	data, err := os.ReadFile("../testdata/floodgate.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rd, err := logs.NewReader(bytes.NewReader(data), logs.Floodgate)
	if err != nil {
		t.Fatal(err)
	}
	lc, bc, pr := query.NewLimitedClients(), query.NewBrowsersCaught(), query.NewPeakRate(nil)
	for rd.Next() {
		lc.Add(rd.Record())
		bc.Add(rd.Record())
		pr.Add(rd.Record())
	}
	namer := baseline.Namer{Key: []byte("test")}
	br, rr := baselineResult(t), replayResult(t)
	lr, cr, pk := lc.Result(-1, namer), bc.Result(), pr.Result(10, namer)
	for _, r := range []any{br, rr, lr, cr, pk} {
		poison(reflect.ValueOf(r), s)
	}
	out := map[string]string{}
	for name, write := range map[string]func(*bytes.Buffer){
		"baseline":        func(b *bytes.Buffer) { BaselineTable(b, br, true) },
		"replay":          func(b *bytes.Buffer) { ReplayTable(b, rr) },
		"limited-clients": func(b *bytes.Buffer) { LimitedClientsTable(b, lr, true) },
		"browsers-caught": func(b *bytes.Buffer) { BrowsersCaughtTable(b, cr) },
		"peak-rate":       func(b *bytes.Buffer) { PeakRateTable(b, pk, true) },
	} {
		var b bytes.Buffer
		write(&b)
		out[name] = b.String()
	}
	return out
}

// TestTablesEscape: whatever a log holds, in whichever column, a table
// shows it escaped and keeps its rows: the output of every table, with
// every string of its result set to a hostile one, holds nothing a
// terminal acts on and as many lines as with a plain string.
func TestTablesEscape(t *testing.T) {
	plain := tables(t, "x")
	for _, h := range hostile {
		for name, out := range tables(t, h.in) {
			checkShown(t, fmt.Sprintf("%s table with %q", name, h.in), out)
			if got, want := strings.Count(out, "\n"), strings.Count(plain[name], "\n"); got != want {
				t.Errorf("%s table with %q: %d lines, want %d:\n%s", name, h.in, got, want, out)
			}
			if !strings.Contains(out, h.want) {
				t.Errorf("%s table with %q lacks %q:\n%s", name, h.in, h.want, out)
			}
		}
	}
}

// FuzzTables holds every table to TestTablesEscape's rules for any string.
func FuzzTables(f *testing.F) {
	for _, h := range hostile {
		f.Add(h.in)
	}
	plain := tables(f, "x")
	f.Fuzz(func(t *testing.T, s string) {
		shown := text(s)
		checkShown(t, fmt.Sprintf("text(%q)", s), shown)
		checkReadsBack(t, s, shown)
		for name, out := range tables(t, s) {
			checkShown(t, fmt.Sprintf("%s table with %q", name, s), out)
			// An empty string leaves out lines ("charged 0 in" for a
			// rule without a cost): count lines only against another.
			if got, want := strings.Count(out, "\n"), strings.Count(plain[name], "\n"); s != "" && got != want {
				t.Errorf("%s table with %q: %d lines, want %d", name, s, got, want)
			}
		}
	})
}
