package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/logs"
)

// elasticLines returns the lines of the real Elastic log, unparsed one
// included.
func elasticLines(t *testing.T) []string {
	t.Helper()
	fh, err := os.Open(elastic)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// writeLog writes lines to dir/name, gzip-compressed when name ends in
// .gz, and returns its path.
func writeLog(t *testing.T, dir, name string, lines []string) string {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	data := b.Bytes()
	if strings.HasSuffix(name, ".gz") {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		data = z.Bytes()
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFileOrder: replay gives the answer of the requests in time order
// whatever the order of the files: rotated logs listed newest first,
// per-node logs of one period, shards of any order, standard input among
// files. The sliding-window rule's numbers are those of the whole log
// read as one file, and no request is replayed late.
func TestFileOrder(t *testing.T) {
	lines := elasticLines(t)
	dir := t.TempDir()
	chunks := func(n int) []string { // consecutive parts, as logrotate cuts
		var out []string
		size := (len(lines) + n - 1) / n
		for i := 0; i < len(lines); i += size {
			name := fmt.Sprintf("rotated%d-%d.log", n, i/size)
			if i == 0 {
				name += ".gz"
			}
			out = append(out, writeLog(t, dir, name, lines[i:min(i+size, len(lines))]))
		}
		return out
	}
	nodes := func(n int) []string { // line i to node i mod n: the same minutes in every file
		parts := make([][]string, n)
		for i, l := range lines {
			parts[i%n] = append(parts[i%n], l)
		}
		var out []string
		for i, p := range parts {
			out = append(out, writeLog(t, dir, fmt.Sprintf("node%d-%d.log", n, i), p))
		}
		return out
	}
	reversed := func(s []string) []string { s = slices.Clone(s); slices.Reverse(s); return s }
	shuffled := func(s []string) []string {
		s = slices.Clone(s)
		rand.New(rand.NewPCG(1, 2)).Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		return s
	}
	halves := chunks(2)
	rest := halves[1]
	for _, tc := range []struct {
		name  string
		files []string
		stdin string // a file read as standard input, named "-" in files
	}{
		{"halves in order", halves, ""},
		{"halves reversed", reversed(halves), ""},
		{"rotated, newest first", reversed(chunks(5)), ""},
		{"rotated, shuffled", shuffled(chunks(12)), ""},
		{"two nodes of one period", nodes(2), ""},
		{"two nodes, reversed", reversed(nodes(2)), ""},
		{"seven nodes, shuffled", shuffled(nodes(7)), ""},
		{"second half from standard input, first", []string{"-", halves[0]}, rest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := AdHocRules([]string{"40/1m", "20/1m"}, "")
			if err != nil {
				t.Fatal(err)
			}
			want := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, elastic)
			o := logs.ReadOptions{}
			if tc.stdin != "" {
				data, err := os.ReadFile(tc.stdin)
				if err != nil {
					t.Fatal(err)
				}
				o.Stdin = bytes.NewReader(data)
			}
			got := replayFiles(t, Options{Rules: set, LogOnly: true}, o, tc.files...)
			if got.Lines != 10000 || got.Parsed != 9999 || got.Requests != 9999 || got.Order != (Order{}) {
				t.Errorf("lines %d, parsed %d, requests %d, order %+v; want 10000, 9999, 9999 and all in order",
					got.Lines, got.Parsed, got.Requests, got.Order)
			}
			if diff := cmp.Diff(got.Rules, want.Rules); diff != "" {
				t.Errorf("rules (-got +want, the whole log as one file):\n%s", diff)
			}
			if got.From != want.From || got.To != want.To {
				t.Errorf("from %s to %s, want %s to %s", got.From, got.To, want.From, want.To)
			}
		})
	}
}

// clfLine is a common-format line of client at t.
func clfLine(client string, t time.Time) string {
	return fmt.Sprintf(`%s - - [%s] "GET /x HTTP/1.1" 200 1`, client, t.Format("02/Jan/2006:15:04:05 -0700"))
}

// TestFarAhead: a record dated far ahead of the records around it in its
// file is left out and counted; a log that moves on (traffic after a
// quiet day), a far-ahead last line, and a slow request logged late are
// not.
func TestFarAhead(t *testing.T) {
	const s, h = time.Second, time.Hour
	future := 20 * 365 * 24 * h
	many := []time.Duration{0, s}
	for i := range maxAhead + 1 {
		many = append(many, future+time.Duration(i)*s)
	}
	many = append(many, 2*s, 3*s)
	for _, tc := range []struct {
		name     string
		offsets  []time.Duration // line times, from t0, in file order
		leftOut  int64
		maxAhead time.Duration
	}{
		{"one line years ahead", []time.Duration{0, s, 2 * s, future, 3 * s, 4 * s}, 1, future - 3*s},
		{"the first line years ahead", []time.Duration{future, 0, s, 2 * s}, 1, future},
		{"three lines years ahead", []time.Duration{0, s, future, future + s, future + 2*s, 2 * s, 3 * s}, 3, future},
		{"two days ahead, then back", []time.Duration{0, s, 48 * h, 2 * s}, 1, 48*h - 2*s},
		{"the last line years ahead", []time.Duration{0, s, 2 * s, future}, 0, 0},
		{"traffic after two quiet days", []time.Duration{0, s, 50 * h, 50*h + s, 50*h + 2*s}, 0, 0},
		{"a slow request logged after a quiet day", []time.Duration{0, s, 25 * h, 25*h - 10*time.Minute, 25*h + s}, 0, 0},
		{"more lines ahead than are held", many, 0, 0},
		{"one line years behind", []time.Duration{0, s, -future, 2 * s}, 0, 0},
		{"an hour ahead", []time.Duration{0, s, h, 2 * s, 3 * s}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			for _, off := range tc.offsets {
				lines = append(lines, clfLine("192.0.2.1", t0.Add(off)))
			}
			name := writeLog(t, t.TempDir(), "a.log", lines)
			var got []int64
			files, left, err := ReadOrdered([]string{name}, logs.ReadOptions{}, func(r *logs.Record, _ Lateness) { got = append(got, r.Time) })
			if err != nil {
				t.Fatal(err)
			}
			if left.Records != tc.leftOut || left.MaxAhead != tc.maxAhead {
				t.Errorf("left out %d, at most %v ahead; want %d, %v", left.Records, left.MaxAhead, tc.leftOut, tc.maxAhead)
			}
			if n := int64(len(got)) + left.Records; n != int64(len(tc.offsets)) || files[0].Parsed != int64(len(tc.offsets)) {
				t.Errorf("%d records replayed and %d left out of %d parsed, want %d", len(got), left.Records, files[0].Parsed, len(tc.offsets))
			}
			if !slices.IsSorted(got) {
				t.Errorf("records not in time order: %v", got)
			}
		})
	}
}

// TestFarAheadDoesNotMoveTheClock: a line dated 2035 in the real log is
// left out, said so, and the rules' numbers are those of the log without
// it.
func TestFarAheadDoesNotMoveTheClock(t *testing.T) {
	lines := elasticLines(t)
	bad := clfLine("192.0.2.1", time.Date(2035, 5, 17, 10, 5, 0, 0, time.UTC)) + ` "-" "` + browserUA + `"`
	withBad := slices.Concat(lines[:100], []string{bad}, lines[100:])
	dir := t.TempDir()
	set, err := AdHocRules([]string{"40/1m"}, "")
	if err != nil {
		t.Fatal(err)
	}
	want := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, writeLog(t, dir, "good.log", lines))
	got := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, writeLog(t, dir, "bad.log", withBad))
	if got.Order.LeftOut != 1 || got.Order.LeftOutMaxAheadSeconds < 19*365*24*3600 || got.Order.Late != 0 {
		t.Errorf("order = %+v, want 1 record left out, about 20 years ahead, none late", got.Order)
	}
	if diff := cmp.Diff(got.Rules, want.Rules); diff != "" {
		t.Errorf("rules (-with the 2035 line +without):\n%s", diff)
	}
	if got.To != want.To {
		t.Errorf("to = %s, want %s", got.To, want.To)
	}
}

// TestLate: requests that reach the engine older than its clock are
// counted, with how much older at most: given to Add out of order, or
// read further out of order than a file's reorder bound.
func TestLate(t *testing.T) {
	set, err := AdHocRules([]string{"40/1m"}, "")
	if err != nil {
		t.Fatal(err)
	}
	r := New(Options{Rules: set, LogOnly: true})
	for _, off := range []time.Duration{10 * time.Second, 0, 5 * time.Second, 20 * time.Second} {
		r.Add(context.Background(), record("192.0.2.1", "GET", "/", browserUA, t0.Add(off)))
	}
	// Given to Add out of order, they are late for no reason ReadOrdered
	// knows.
	if got, want := r.Result().Order, (Order{Late: 2, LateMaxSeconds: 10}); got != want {
		t.Errorf("Add out of order: order = %+v, want %+v", got, want)
	}

	// More lines than a file's reorder bound holds, over more than
	// ReorderSpan, then one dated before all of them.
	var lines []string
	n := 2 * reorderBytes / heldOverhead
	const step = 20 * time.Millisecond
	for i := range n {
		lines = append(lines, clfLine(fmt.Sprintf("192.0.2.%d", i%200), t0.Add(time.Duration(i+1)*step)))
	}
	lines = append(lines, clfLine("192.0.2.1", t0))
	res := replayFiles(t, Options{Rules: set, LogOnly: true}, logs.ReadOptions{}, writeLog(t, t.TempDir(), "big.log", lines))
	if most := (time.Duration(n) * step).Seconds(); res.Order.Late != 1 || res.Order.LateMaxSeconds <= 0 || res.Order.LateMaxSeconds > most || res.Requests != int64(n+1) {
		t.Errorf("order = %+v, requests %d; want 1 late by up to %gs, %d requests", res.Order, res.Requests, most, n+1)
	}
	if want := (LateReasons{Span: 1}); res.Order.LateReasons != want {
		t.Errorf("late for %+v, want %+v: its line came more than ReorderSpan after later ones", res.Order.LateReasons, want)
	}
}

// albLine is an AWS ALB access-log line of a request from client that
// arrived at created and was answered took later: the line's time, when
// the load balancer wrote it, is created+took.
func albLine(client string, created time.Time, took time.Duration) string {
	const f = "2006-01-02T15:04:05.000000Z"
	return fmt.Sprintf(`https %s app/lb/1 %s:2817 10.0.0.1:80 0.001 %.3f 0.000 200 200 34 366 "GET https://www.example.com:443/scores HTTP/1.1" "curl/8" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:1:targetgroup/t/1 "Root=1-2" "www.example.com" "-" 0 %s "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"`,
		created.Add(took).Format(f), client, took.Seconds(), created.Format(f))
}

// albLog returns the lines an ALB writes, in the order it writes them
// (as it sends each response), for perSecond requests a second over
// span from t0, each answered in 10 ms, and one more that arrives at
// t0+slowAt and is answered took later.
func albLog(perSecond int, span, slowAt, took time.Duration) []string {
	type line struct {
		sent time.Time
		text string
	}
	var ls []line
	const fast = 10 * time.Millisecond
	for i := range int(span.Seconds()) * perSecond {
		c := t0.Add(time.Duration(i) * time.Second / time.Duration(perSecond))
		ls = append(ls, line{c.Add(fast), albLine(fmt.Sprintf("192.0.2.%d", i%200), c, fast)})
	}
	ls = append(ls, line{t0.Add(slowAt + took), albLine("198.51.100.7", t0.Add(slowAt), took)})
	slices.SortStableFunc(ls, func(a, b line) int { return a.sent.Compare(b.sent) })
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

// lateness is what readLate saw: the records, those older than one
// handed on before them, by how much at most, and by reason.
type lateness struct {
	records, late int64
	max           time.Duration
	reasons       LateReasons
}

// readLate reads names within b and says which records came late and
// why, failing t when a record is given a reason and is not late, or is
// late without one.
func readLate(t *testing.T, names []string, b bounds) lateness {
	t.Helper()
	var got lateness
	var clock int64
	wrong := 0
	_, _, err := readOrdered(names, logs.ReadOptions{}, b, func(r *logs.Record, why Lateness) {
		got.records++
		if late := r.Time < clock; late != (why != OnTime) {
			wrong++
		} else if late {
			got.late++
			got.max = max(got.max, time.Duration(clock-r.Time))
			got.reasons.add(why)
		}
		clock = max(clock, r.Time)
	})
	if err != nil {
		t.Fatal(err)
	}
	if wrong > 0 {
		t.Errorf("%d records given a reason to be late when they are not, or late without one", wrong)
	}
	return got
}

// TestReorderSpan: a request logged when it ended and stamped with its
// start (ALB's request_creation_time) is put back in order when it took
// up to ReorderSpan, however busy the log, within what the files may
// hold; one that took longer, or in a log busier than that, is late, by
// no more than it took less the span, and said late for that reason.
func TestReorderSpan(t *testing.T) {
	const s, m = time.Second, time.Minute
	small := bounds{hold: 64 << 10, extra: 256 << 10, span: ReorderSpan} // about 850 records
	for _, tc := range []struct {
		name               string
		b                  bounds
		perSecond          int
		span, slowAt, took time.Duration
		late               int64
		lateMin, lateMax   time.Duration
		reasons            LateReasons
	}{
		{"a minute-long request in a busy log", defaultBounds, 500, 90 * s, 5 * s, m, 0, 0, 0, LateReasons{}},
		{"a long request in a quiet log", defaultBounds, 1, 20 * m, 10 * s, 10 * m, 0, 0, 0, LateReasons{}},
		{"a request longer than the span", defaultBounds, 50, 8 * m, 10 * s, 7 * m, 1, 7*m - ReorderSpan - s, 7*m - ReorderSpan + s, LateReasons{Span: 1}},
		{"a log busier than the files may hold", small, 500, 90 * s, 5 * s, m, 1, s, m, LateReasons{Memory: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := writeLog(t, t.TempDir(), "alb.log", albLog(tc.perSecond, tc.span, tc.slowAt, tc.took))
			got := readLate(t, []string{name}, tc.b)
			if want := int64(tc.span.Seconds())*int64(tc.perSecond) + 1; got.records != want {
				t.Fatalf("%d records, want %d", got.records, want)
			}
			if got.late != tc.late || got.max < tc.lateMin || got.max > tc.lateMax {
				t.Errorf("%d late by up to %v, want %d by %v to %v", got.late, got.max, tc.late, tc.lateMin, tc.lateMax)
			}
			if got.reasons != tc.reasons {
				t.Errorf("late for %+v, want %+v", got.reasons, tc.reasons)
			}
		})
	}
}

// TestLateAcrossFiles: a record that comes late after another file's is
// said late for why: its file waited to be opened while MaxOpen others
// were; its line came more than ReorderSpan after its file's first lines,
// by which the file was opened; or a slow request past the span in one
// of two files of the same minutes.
func TestLateAcrossFiles(t *testing.T) {
	const s, m = time.Second, time.Minute
	every := func(from time.Time, n int) []string { // a line a second
		var lines []string
		for i := range n {
			lines = append(lines, clfLine("192.0.2.1", from.Add(time.Duration(i)*s)))
		}
		return lines
	}

	t.Run("a file that waited while others were open", func(t *testing.T) {
		dir := t.TempDir()
		var names []string
		for f := range MaxOpen + 1 {
			// The last begins a second after the others: it is the one
			// that waits, until one of them ends ten minutes later.
			names = append(names, writeLog(t, dir, fmt.Sprintf("n%02d.log", f), every(t0.Add(time.Duration(f/MaxOpen)*s), 600)))
		}
		got := readLate(t, names, defaultBounds)
		if got.late < 500 || got.reasons != (LateReasons{OpenFiles: got.late}) {
			t.Errorf("%d late, for %+v; want over 500, every one for the open files", got.late, got.reasons)
		}
	})

	t.Run("a line more than the span before its file's first lines", func(t *testing.T) {
		dir := t.TempDir()
		early := writeLog(t, dir, "early.log", every(t0, 20*60))
		late := every(t0.Add(15*m), 100)
		late = slices.Insert(late, startRecords+10, clfLine("192.0.2.1", t0.Add(m)))
		got := readLate(t, []string{writeLog(t, dir, "late.log", late), early}, defaultBounds)
		if got.late != 1 || got.reasons != (LateReasons{Span: 1}) {
			t.Errorf("%d late, for %+v; want 1, for the span", got.late, got.reasons)
		}
	})

	t.Run("a slow request in one of two nodes' files", func(t *testing.T) {
		lines := albLog(100, 8*m, 10*s, 7*m) // each file 50 a second, as the one-file case
		dir := t.TempDir()
		var a, b []string
		for i, l := range lines {
			if i%2 == 0 {
				a = append(a, l)
			} else {
				b = append(b, l)
			}
		}
		got := readLate(t, []string{writeLog(t, dir, "a.log", a), writeLog(t, dir, "b.log", b)}, defaultBounds)
		if got.late != 1 || got.reasons != (LateReasons{Span: 1}) {
			t.Errorf("%d late, for %+v; want 1, for the span", got.late, got.reasons)
		}
	})
}

// TestManyOverlappingFiles: more files of one period than are read at
// once are all read, every record once.
func TestManyOverlappingFiles(t *testing.T) {
	dir := t.TempDir()
	var names []string
	for f := range MaxOpen + 8 {
		var lines []string
		for i := range 50 {
			lines = append(lines, clfLine(fmt.Sprintf("192.0.2.%d", f), t0.Add(time.Duration(i*(MaxOpen+8)+f)*time.Second)))
		}
		names = append(names, writeLog(t, dir, fmt.Sprintf("n%02d.log", f), lines))
	}
	seen := map[int64]int{}
	files, left, err := ReadOrdered(names, logs.ReadOptions{}, func(r *logs.Record, _ Lateness) { seen[r.Time]++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 50*(MaxOpen+8) || left.Records != 0 || len(files) != MaxOpen+8 {
		t.Errorf("%d distinct records, %d left out, %d files; want %d, 0, %d", len(seen), left.Records, len(files), 50*(MaxOpen+8), MaxOpen+8)
	}
	for i, f := range files {
		if f.Name != names[i] || f.Parsed != 50 {
			t.Errorf("files[%d] = %+v, want %s with 50 records", i, f, names[i])
		}
	}
	for tm, n := range seen {
		if n != 1 {
			t.Errorf("record at %d given %d times", tm, n)
		}
	}
}

// TestReadOrderedErrors: a file that cannot be read is an error naming it,
// as logs.ReadFiles says it.
func TestReadOrderedErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeLog(t, dir, "good.log", []string{clfLine("192.0.2.1", t0)})
	corrupt := filepath.Join(dir, "corrupt.log.gz")
	if err := os.WriteFile(corrupt, []byte("\x1f\x8b\x08\x00garbage that is not deflate"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{
		{good, filepath.Join(dir, "missing.log")},
		{corrupt},
		{good, corrupt},
	} {
		_, _, err := ReadOrdered(names, logs.ReadOptions{}, func(*logs.Record, Lateness) {})
		_, wantErr := logs.ReadFiles(names, logs.ReadOptions{}, func(*logs.Record) {})
		if err == nil || wantErr == nil || err.Error() != wantErr.Error() {
			t.Errorf("ReadOrdered(%q) = %v, want %v", names, err, wantErr)
		}
	}
}

// TestHeldCopiesEverySlice: a held record owns every byte it points to,
// whatever fields Record gains: each []byte and [][]byte field is filled,
// the source overwritten, and the copy must not change.
func TestHeldCopiesEverySlice(t *testing.T) {
	var src logs.Record
	v := reflect.ValueOf(&src).Elem()
	var buffers [][]byte
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Type() {
		case reflect.TypeFor[[]byte]():
			b := []byte(fmt.Sprintf("field-%d", i))
			buffers = append(buffers, b)
			f.SetBytes(b)
		case reflect.TypeFor[[][]byte]():
			a, b := []byte(fmt.Sprintf("field-%d-a", i)), []byte(fmt.Sprintf("field-%d-b", i))
			buffers = append(buffers, a, b)
			f.Set(reflect.ValueOf([][]byte{a, b}))
		}
	}
	var h held
	h.set(&src, &merger{})
	want := fmt.Sprintf("%+v", h.rec)
	for _, b := range buffers {
		for i := range b {
			b[i] = 'X'
		}
	}
	if got := fmt.Sprintf("%+v", h.rec); got != want {
		t.Errorf("held record changed with its source:\n got %s\nwant %s", got, want)
	}
}
