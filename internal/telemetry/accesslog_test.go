package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/testnet"
	"github.com/floodgate/floodgate/internal/uaclass"
)

func sampleAccess() AccessRecord {
	return AccessRecord{
		Time:       time.Date(2026, 11, 30, 11, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		Method:     "GET",
		Path:       "/api/v1/score-sets/urn:mavedb:00000053-a-1/scores",
		Status:     429,
		Route:      "api",
		Duration:   412 * time.Microsecond,
		UserAgent:  "python-requests/2.31.0",
		Client:     "3f2a9c0d1e4b5a6f",
		Bytes:      187,
		BlockedBy:  "rate-limit-csv-endpoints",
		WouldBlock: []string{"shadow-requests"},
	}
}

func TestAccessRecordFormat(t *testing.T) {
	got := string(AppendAccessRecord(nil, ptr(sampleAccess())))
	want := `{"time":"2026-11-30T10:00:00.123456789Z","msg":"access","method":"GET",` +
		`"path":"/api/v1/score-sets/urn:mavedb:00000053-a-1/scores","status":429,"route":"api",` +
		`"duration_ms":0.412,"ua":"python-requests/2.31.0","ua_class":"script","client":"3f2a9c0d1e4b5a6f",` +
		`"bytes":187,"blocked_by":"rate-limit-csv-endpoints","would_block":["shadow-requests"]}` + "\n"
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("AppendAccessRecord (-got +want):\n%s", diff)
	}

	// Empty rule fields are left out; a given class is kept.
	rec := sampleAccess()
	rec.BlockedBy, rec.WouldBlock, rec.UAClass = "", nil, uaclass.Browser
	got = string(AppendAccessRecord(nil, &rec))
	if strings.Contains(got, "blocked_by") || strings.Contains(got, "would_block") {
		t.Errorf("record without rules = %s, want no blocked_by or would_block", got)
	}
	if !strings.Contains(got, `"ua_class":"browser"`) {
		t.Errorf("record with UAClass browser = %s", got)
	}
	if strings.Contains(got, "listener") {
		t.Errorf("record of the public listener = %s, want no listener", got)
	}

	// A request of another listener says which.
	rec.Listener = "internal"
	if got = string(AppendAccessRecord(nil, &rec)); !strings.Contains(got, `"bytes":187,"listener":"internal"}`) {
		t.Errorf("record of the internal listener = %s", got)
	}

	// A session (its hash) and an API client, after the size.
	rec.Session, rec.APIClient = "9c1d2e3f4a5b6c7d", "research-lab"
	if got = string(AppendAccessRecord(nil, &rec)); !strings.Contains(got, `"bytes":187,"session":"9c1d2e3f4a5b6c7d","api_client":"research-lab","listener":"internal"}`) {
		t.Errorf("record with a session and an API client = %s", got)
	}
	if rec.Session, rec.APIClient = "", ""; strings.Contains(string(AppendAccessRecord(nil, &rec)), "session") {
		t.Errorf("record without a session = %s, want no session", AppendAccessRecord(nil, &rec))
	}
}

func ptr[T any](v T) *T { return &v }

// TestAccessRecordJSON decodes records with hostile strings with
// encoding/json and compares them with what encoding/json itself would
// have written.
func TestAccessRecordJSON(t *testing.T) {
	for _, s := range []string{
		"", `"quoted"`, `back\slash`, "line\nbreak\r\ttab", "\x00\x01\x1f\x7f",
		"invalid \xff\xfe utf-8", "\u2028\u2029", "<script>&amp;</script>", "héllo wörld ✓ 😀",
		"\xed\xa0\x80", // a UTF-16 surrogate encoded in UTF-8: invalid
	} {
		rec := sampleAccess()
		rec.Path, rec.UserAgent, rec.Client, rec.BlockedBy, rec.WouldBlock = s, s, s, s+"x", []string{s, "b"}
		line := AppendAccessRecord(nil, &rec)
		var got map[string]any
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("record with %q: %v\n%s", s, err, line)
		}
		want := roundTrip(t, s)
		for _, k := range []string{"path", "ua", "client"} {
			if got[k] != want {
				t.Errorf("record with %q: %s = %q, want %q", s, k, got[k], want)
			}
		}
		if wb := got["would_block"].([]any); wb[0] != want {
			t.Errorf("record with %q: would_block[0] = %q, want %q", s, wb[0], want)
		}
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Errorf("record with %q is not one line: %q", s, line)
		}
	}
}

// roundTrip returns what encoding/json makes of s.
func roundTrip(t testing.TB, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "\x00\n", "\xff", "\u2028", "😀"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("appendJSONString(%q) = %s: %v", s, b, err)
		}
		if want := roundTrip(t, s); got != want {
			t.Fatalf("appendJSONString(%q) decodes to %q, encoding/json gives %q", s, got, want)
		}
	})
}

func TestAccessLogConcurrentLines(t *testing.T) {
	var buf testnet.Buffer
	a := NewAccessLog(&buf)
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				rec := sampleAccess()
				rec.Client = strings.Repeat(string(rune('a'+w)), 16)
				a.Write(rec)
			}
		}()
	}
	wg.Wait()
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	n := 0
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d is not JSON: %s", n+1, sc.Bytes())
		}
		n++
	}
	if n != writers*each {
		t.Errorf("lines = %d, want %d", n, writers*each)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestAccessLogCountsErrors(t *testing.T) {
	a := NewAccessLog(failWriter{})
	a.Write(sampleAccess())
	a.Write(sampleAccess())
	if got := a.Errors(); got != 2 {
		t.Errorf("Errors() = %d, want 2", got)
	}
}

// TestAccessRecordDoesNotAllocate holds the hot-path budget: encoding a
// record into a buffer with room costs nothing.
func TestAccessRecordDoesNotAllocate(t *testing.T) {
	rec := sampleAccess()
	rec.UAClass = uaclass.Unknown // classify inside, too
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(1000, func() { buf = AppendAccessRecord(buf[:0], &rec) }); n != 0 {
		t.Errorf("AppendAccessRecord allocs = %v, want 0", n)
	}
}

// BenchmarkAccessLog compares the access log with encoding/json and
// log/slog writing the same fields to io.Discard.
func BenchmarkAccessLog(b *testing.B) {
	rec := sampleAccess()
	b.Run("impl=accesslog", func(b *testing.B) {
		a := NewAccessLog(io.Discard)
		b.ReportAllocs()
		for b.Loop() {
			a.Write(rec)
		}
	})
	b.Run("impl=encoding_json", func(b *testing.B) {
		type jsonRecord struct {
			Time       time.Time `json:"time"`
			Msg        string    `json:"msg"`
			Method     string    `json:"method"`
			Path       string    `json:"path"`
			Status     int       `json:"status"`
			Route      string    `json:"route"`
			DurationMS float64   `json:"duration_ms"`
			UA         string    `json:"ua"`
			UAClass    string    `json:"ua_class"`
			Client     string    `json:"client"`
			Bytes      int64     `json:"bytes"`
			BlockedBy  string    `json:"blocked_by,omitempty"`
			WouldBlock []string  `json:"would_block,omitempty"`
		}
		enc := json.NewEncoder(io.Discard)
		b.ReportAllocs()
		for b.Loop() {
			_ = enc.Encode(jsonRecord{rec.Time.UTC(), "access", rec.Method, rec.Path, rec.Status, rec.Route,
				float64(rec.Duration.Microseconds()) / 1000, rec.UserAgent, uaclass.Classify(rec.UserAgent).String(),
				rec.Client, rec.Bytes, rec.BlockedBy, rec.WouldBlock})
		}
	})
	b.Run("impl=slog", func(b *testing.B) {
		l := slog.New(slog.NewJSONHandler(io.Discard, nil))
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			l.LogAttrs(ctx, slog.LevelInfo, "access",
				slog.String("method", rec.Method), slog.String("path", rec.Path), slog.Int("status", rec.Status),
				slog.String("route", rec.Route), slog.Float64("duration_ms", float64(rec.Duration.Microseconds())/1000),
				slog.String("ua", rec.UserAgent), slog.String("ua_class", uaclass.Classify(rec.UserAgent).String()),
				slog.String("client", rec.Client), slog.Int64("bytes", rec.Bytes),
				slog.String("blocked_by", rec.BlockedBy), slog.Any("would_block", rec.WouldBlock))
		}
	})
}
