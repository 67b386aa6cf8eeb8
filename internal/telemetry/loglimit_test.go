package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func newFakeClock() *fakeClock { return &fakeClock{t: t0} } // ring_test.go

// scheduler records the flushes a LogLimiter asks for, instead of
// running them on a timer.
type scheduler struct {
	mu    sync.Mutex
	after []time.Duration
}

func (s *scheduler) AfterFunc(d time.Duration, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.after = append(s.after, d)
}

// logLines returns the JSON lines written to buf, each without its time,
// and empties buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		delete(m, "time")
		out = append(out, m)
	}
	buf.Reset()
	return out
}

func newTestLimiter(interval time.Duration) (*LogLimiter, *fakeClock, *scheduler, *bytes.Buffer) {
	var buf bytes.Buffer
	clock, sched := newFakeClock(), new(scheduler)
	l := NewLogLimiter(slog.New(slog.NewJSONHandler(&buf, nil)), LogLimiterOptions{
		Interval: interval, Now: clock.Now, AfterFunc: sched.AfterFunc,
	})
	return l, clock, sched, &buf
}

func TestLogLimiter(t *testing.T) {
	l, clock, sched, buf := newTestLimiter(10 * time.Second)
	line := func(count float64, attrs ...any) map[string]any {
		m := map[string]any{"level": "WARN", "msg": "upstream failed", "count": count, "interval": "10s"}
		for i := 0; i < len(attrs); i += 2 {
			m[attrs[i].(string)] = attrs[i+1]
		}
		return m
	}
	ev := func(key, route string) bool {
		return l.Log(key, slog.LevelWarn, "upstream failed", slog.String("route", route))
	}

	// The first event of a key is written at once.
	if !ev("a", "r1") {
		t.Error("first event: not written")
	}
	if diff := cmp.Diff(logLines(t, buf), []map[string]any{line(1, "route", "r1")}); diff != "" {
		t.Errorf("first event (-got +want):\n%s", diff)
	}
	// A thousand more within the interval: counted, nothing written, one
	// flush scheduled for the interval's end.
	for i := 0; i < 1000; i++ {
		clock.Advance(time.Millisecond)
		if ev("a", "r2") {
			t.Fatalf("event %d within the interval written", i+2)
		}
	}
	if got := logLines(t, buf); len(got) != 0 {
		t.Errorf("within the interval: %d lines, want none: %v", len(got), got)
	}
	if want := []time.Duration{10*time.Second - time.Millisecond}; !cmp.Equal(sched.after, want) {
		t.Errorf("flushes scheduled in %v, want %v", sched.after, want)
	}
	// Another key is not held back by the first.
	if !ev("b", "r3") {
		t.Error("first event of another key: not written")
	}
	logLines(t, buf)
	// A flush before the interval's end writes nothing.
	l.Flush(false)
	if got := logLines(t, buf); len(got) != 0 {
		t.Errorf("early flush: %v, want nothing", got)
	}
	// At its end, the flush writes the count, with the last event's
	// attributes.
	clock.Advance(9 * time.Second)
	l.Flush(false)
	if diff := cmp.Diff(logLines(t, buf), []map[string]any{line(1000, "route", "r2")}); diff != "" {
		t.Errorf("flush at the interval's end (-got +want):\n%s", diff)
	}
	// Without a flush, the next event after the interval writes its
	// count, itself included.
	clock.Advance(time.Second)
	ev("a", "r1")
	clock.Advance(10 * time.Second)
	if !ev("a", "r4") {
		t.Error("event after the interval: not written")
	}
	if diff := cmp.Diff(logLines(t, buf), []map[string]any{line(2, "route", "r4")}); diff != "" {
		t.Errorf("event after the interval (-got +want):\n%s", diff)
	}
	// force writes what is counted before the interval's end.
	ev("a", "r5")
	l.FlushKey("a", true)
	if diff := cmp.Diff(logLines(t, buf), []map[string]any{line(1, "route", "r5")}); diff != "" {
		t.Errorf("forced flush (-got +want):\n%s", diff)
	}
	// A key quiet for an interval is forgotten; its next event is written
	// at once, as a first.
	clock.Advance(time.Minute)
	l.Flush(false)
	l.mu.Lock()
	keys := len(l.keys)
	l.mu.Unlock()
	if keys != 0 {
		t.Errorf("%d keys kept after a quiet interval, want 0", keys)
	}
	if !ev("a", "r6") {
		t.Error("event after a quiet interval: not written")
	}
}

// TestLogLimiterEveryEventCounted has several goroutines log events of a
// few keys while the clock moves, and checks that the counts of the lines
// add up to the events.
func TestLogLimiterEveryEventCounted(t *testing.T) {
	l, clock, _, buf := newTestLimiter(time.Second)
	var mu sync.Mutex // buf is not safe for concurrent writes
	l.log = slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	const workers, events = 4, 500
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < events; i++ {
				if w == 0 && i%50 == 0 {
					clock.Advance(300 * time.Millisecond)
				}
				l.Log([]string{"x", "y"}[i%2], slog.LevelWarn, "m")
			}
		}()
	}
	wg.Wait()
	l.Flush(true)
	total := 0.0
	lines := logLines(t, buf)
	for _, m := range lines {
		total += m["count"].(float64)
	}
	if total != workers*events {
		t.Errorf("counts add up to %v over %d lines, want %d", total, len(lines), workers*events)
	}
	if len(lines) > 2*(1+int(clock.Now().Sub(newFakeClock().Now())/time.Second)+1) {
		t.Errorf("%d lines for %v of events: more than one per key per interval", len(lines), clock.Now().Sub(newFakeClock().Now()))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestFailuresStoreOutage follows a store outage as the gateway reports
// it: the state changes are written at once, the rules skipped one line
// per interval, whatever the rule, and the count at recovery.
func TestFailuresStoreOutage(t *testing.T) {
	var buf bytes.Buffer
	clock, sched := newFakeClock(), new(scheduler)
	m := NewMetrics("test")
	f := NewFailures(slog.New(slog.NewJSONHandler(&buf, nil)), m, LogLimiterOptions{
		Interval: 10 * time.Second, Now: clock.Now, AfterFunc: sched.AfterFunc,
	})
	storeErr := errors.New("redisstore: unavailable: not connected")
	fail := func(rule string) {
		f.StoreFailed(storeErr)
		f.RuleSkipped(rule, "store", storeErr)
	}

	f.StoreAnswered() // up, and was: nothing to say
	if got := logLines(t, &buf); len(got) != 0 {
		t.Errorf("store answering: %v, want nothing", got)
	}
	fail("per-ip")
	want := []map[string]any{
		{"level": "WARN", "msg": "store failing", "error": storeErr.Error()},
		{"level": "WARN", "msg": "rule skipped", "rule": "per-ip", "kind": "store", "error": storeErr.Error(), "count": 1.0, "interval": "10s"},
	}
	if diff := cmp.Diff(logLines(t, &buf), want); diff != "" {
		t.Errorf("first failure (-got +want):\n%s", diff)
	}
	for i := 0; i < 500; i++ {
		clock.Advance(10 * time.Millisecond)
		fail([]string{"per-ip", "per-session"}[i%2])
	}
	// 5s of failures: within the interval, nothing more.
	if got := logLines(t, &buf); len(got) != 0 {
		t.Errorf("500 failures within the interval: %d lines, want none", len(got))
	}
	clock.Advance(5 * time.Second)
	fail("per-ip") // 10s after the first line: the count, this one included
	want = []map[string]any{
		{"level": "WARN", "msg": "rule skipped", "rule": "per-ip", "kind": "store", "error": storeErr.Error(), "count": 501.0, "interval": "10s"},
	}
	if diff := cmp.Diff(logLines(t, &buf), want); diff != "" {
		t.Errorf("after the interval (-got +want):\n%s", diff)
	}
	clock.Advance(time.Second)
	fail("per-session")
	fail("per-ip")
	clock.Advance(time.Second)
	f.StoreAnswered() // back: what is counted, then the change, at once
	f.StoreAnswered()
	want = []map[string]any{
		{"level": "WARN", "msg": "rule skipped", "rule": "per-ip", "kind": "store", "error": storeErr.Error(), "count": 2.0, "interval": "10s"},
		{"level": "INFO", "msg": "store answering again", "failures": 504.0, "failing_for": "12s"},
	}
	if diff := cmp.Diff(logLines(t, &buf), want); diff != "" {
		t.Errorf("recovery (-got +want):\n%s", diff)
	}
	// The next outage is a change again, written at once.
	f.StoreFailed(storeErr)
	if got := logLines(t, &buf); len(got) != 1 || got[0]["msg"] != "store failing" {
		t.Errorf("second outage: %v, want one store failing line", got)
	}
}

// TestFailuresUpstream checks an upstream's failures: counted each in
// floodgate_upstream_errors_total, logged one line per upstream and kind
// per interval, the series there at zero before the first.
func TestFailuresUpstream(t *testing.T) {
	var buf bytes.Buffer
	clock, sched := newFakeClock(), new(scheduler)
	m := NewMetrics("test")
	f := NewFailures(slog.New(slog.NewJSONHandler(&buf, nil)), m, LogLimiterOptions{
		Interval: time.Minute, Now: clock.Now, AfterFunc: sched.AfterFunc,
	})
	f.InitUpstream("api", []string{"refused", "timeout"})
	if got := upstreamErrorSeries(t, m); !cmp.Equal(got, map[string]float64{"api/refused": 0, "api/timeout": 0}) {
		t.Errorf("series before any failure: %v, want api's two at 0", got)
	}
	for i := 0; i < 100; i++ {
		f.Upstream("search", "api", "refused")
	}
	f.Upstream("search", "api", "timeout")
	f.Upstream("search", "frontend", "refused")
	if got, want := upstreamErrorSeries(t, m), map[string]float64{"api/refused": 100, "api/timeout": 1, "frontend/refused": 1}; !cmp.Equal(got, want) {
		t.Errorf("floodgate_upstream_errors_total by upstream/kind = %v, want %v", got, want)
	}
	want := []map[string]any{
		{"level": "WARN", "msg": "upstream failed", "upstream": "api", "kind": "refused", "route": "search", "count": 1.0, "interval": "1m0s"},
		{"level": "WARN", "msg": "upstream failed", "upstream": "api", "kind": "timeout", "route": "search", "count": 1.0, "interval": "1m0s"},
		{"level": "WARN", "msg": "upstream failed", "upstream": "frontend", "kind": "refused", "route": "search", "count": 1.0, "interval": "1m0s"},
	}
	if diff := cmp.Diff(logLines(t, &buf), want); diff != "" {
		t.Errorf("(-got +want):\n%s", diff)
	}
	clock.Advance(time.Minute)
	l := f.Limiter()
	l.Flush(false)
	want = []map[string]any{
		{"level": "WARN", "msg": "upstream failed", "upstream": "api", "kind": "refused", "route": "search", "count": 99.0, "interval": "1m0s"},
	}
	if diff := cmp.Diff(logLines(t, &buf), want); diff != "" {
		t.Errorf("flush (-got +want):\n%s", diff)
	}
}

// upstreamErrorSeries returns floodgate_upstream_errors_total as m's
// registry exposes it, by "upstream/kind".
func upstreamErrorSeries(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "floodgate_upstream_errors_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range mt.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			out[l["upstream"]+"/"+l["kind"]] = mt.GetCounter().GetValue()
		}
	}
	return out
}
