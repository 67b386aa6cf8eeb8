package gateway

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
)

// rlWriter is a statusWriter over a recorder (a writer without field
// lines: the header map path) with RateLimit fields set.
func rlWriter() (*statusWriter, *httptest.ResponseRecorder) {
	rec := httptest.NewRecorder()
	w := new(statusWriter)
	w.reset(rec)
	w.setRateLimit("rate-limit-ip", ratelimit.Decision{Remaining: 7, ResetAfter: 90 * time.Second},
		[]string{`"rate-limit-ip";q=10;w=300`})
	return w, rec
}

const (
	ourRateLimit = `"rate-limit-ip";r=7;t=90`
	ourPolicy    = `"rate-limit-ip";q=10;w=300`
)

// TestRateLimitFieldsInTheMap: written from the header map, floodgate's
// RateLimit fields come ahead of the upstream's, which stay.
func TestRateLimitFieldsInTheMap(t *testing.T) {
	w, rec := rlWriter()
	w.Header()["Ratelimit"] = []string{`"up";r=1;t=1`}
	w.Header()["Ratelimit-Policy"] = []string{`"up";q=2;w=1`}
	w.WriteHeader(http.StatusOK)
	if got, want := rec.Result().Header.Values("Ratelimit"), []string{ourRateLimit, `"up";r=1;t=1`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit %q, want %q", got, want)
	}
	if got, want := rec.Result().Header.Values("Ratelimit-Policy"), []string{ourPolicy, `"up";q=2;w=1`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
}

// TestRateLimitFieldsOnFlush: a flush before any WriteHeader commits the
// header as WriteHeader writes it, RateLimit fields included.
func TestRateLimitFieldsOnFlush(t *testing.T) {
	w, rec := rlWriter()
	w.Flush()
	if !rec.Flushed || rec.Code != http.StatusOK {
		t.Fatalf("flushed %v, status %d", rec.Flushed, rec.Code)
	}
	if got := rec.Result().Header.Values("Ratelimit"); !slices.Equal(got, []string{ourRateLimit}) {
		t.Errorf("RateLimit %q, want %q", got, ourRateLimit)
	}
	if w.code != http.StatusOK {
		t.Errorf("status noted %d, want 200", w.code)
	}
}

// The fields through a 103 Early Hints, on both paths: interim_answers_test.go.

// TestRateLimitFieldsAsLines: to a server that takes field lines, the
// fields go ahead of the upstream's lines, and the request's buffer is
// kept for the next request but not one that grew past maxKeptLines.
func TestRateLimitFieldsAsLines(t *testing.T) {
	lw := &linesRecorder{ResponseRecorder: httptest.NewRecorder()}
	w := new(statusWriter)
	w.reset(lw)
	w.setRateLimit("rate-limit-ip", ratelimit.Decision{Remaining: 7, ResetAfter: 90 * time.Second},
		[]string{`"rate-limit-ip";q=10;w=300`})
	up := "Server: up\r\nRatelimit: \"up\";r=1;t=1\r\n"
	if !w.WriteHeaderLines(http.StatusOK, []byte(up), 3) {
		t.Fatal("lines refused")
	}
	want := "Ratelimit: " + ourRateLimit + "\r\nRatelimit-Policy: " + ourPolicy + "\r\n" + up
	if lw.lines != want {
		t.Errorf("lines\n%q, want\n%q", lw.lines, want)
	}
	if len(lw.Header()) != 0 {
		t.Errorf("the map has %v as well", lw.Header())
	}
	if w.rl.lines != nil {
		t.Error("the fields are still pending after they were written")
	}
	kept := cap(w.rl.buf)
	w.reset(lw)
	if cap(w.rl.buf) != kept || len(w.rl.buf) != 0 || w.rl.lines != nil {
		t.Errorf("reset: buffer cap %d len %d (want %d, 0), pending %q", cap(w.rl.buf), len(w.rl.buf), kept, w.rl.lines)
	}
	w.rl.buf = make([]byte, 0, maxKeptLines+1)
	w.reset(lw)
	if w.rl.buf != nil {
		t.Errorf("reset kept a %d-byte buffer", cap(w.rl.buf))
	}
}

type linesRecorder struct {
	*httptest.ResponseRecorder
	lines string
}

func (r *linesRecorder) WriteHeaderLines(code int, lines []byte, _ int64) bool {
	r.lines = string(lines)
	r.WriteHeader(code)
	return true
}

// TestRateLimitFieldsAfterEarlyHintsWithTheirs: the forwarder's
// sequence for an upstream 103 that carries RateLimit fields — its fields
// into the map, WriteHeader(103), its fields deleted again — leaves
// floodgate's on the final answer.
func TestRateLimitFieldsAfterEarlyHintsWithTheirs(t *testing.T) {
	lw := &linesRecorder{ResponseRecorder: httptest.NewRecorder()}
	w := new(statusWriter)
	w.reset(lw)
	w.setRateLimit("rate-limit-ip", ratelimit.Decision{Remaining: 7, ResetAfter: 90 * time.Second},
		[]string{ourPolicy})
	h := w.Header()
	h["Ratelimit"] = []string{`"up";r=1;t=1`}
	w.WriteHeader(http.StatusEarlyHints)
	delete(h, "Ratelimit")
	if !w.WriteHeaderLines(http.StatusOK, []byte("Server: up\r\n"), 2) {
		t.Fatal("lines refused")
	}
	if want := "Ratelimit: " + ourRateLimit + "\r\n"; !strings.HasPrefix(lw.lines, want) {
		t.Errorf("final lines %q, want them to start with %q", lw.lines, want)
	}
}

// TestRateLimitValueNotInPooledState: on the header-map path the
// value the server's map holds is its own, not the pooled state's, which
// the next request rewrites while the server may still read the map
// (declared trailers are read after the handler returns).
func TestRateLimitValueNotInPooledState(t *testing.T) {
	w, rec := rlWriter()
	w.WriteHeader(http.StatusOK)
	held := rec.Header()["Ratelimit"]
	w.reset(nil)
	w.reset(httptest.NewRecorder())
	w.setRateLimit("other-client", ratelimit.Decision{Remaining: 1, ResetAfter: time.Second}, nil)
	w.WriteHeader(http.StatusOK)
	if held[0] != ourRateLimit {
		t.Errorf("the first answer's map now reads %q, want %q", held[0], ourRateLimit)
	}
}
