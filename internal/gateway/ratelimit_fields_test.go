package gateway

import (
	"net/http"
	"net/http/httptest"
	"slices"
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

// TestRateLimitFieldsOnceAfterEarlyHints: an informational answer takes
// the fields (as it takes the header as it stands), and the final answer
// has them once.
func TestRateLimitFieldsOnceAfterEarlyHints(t *testing.T) {
	w, rec := rlWriter()
	w.WriteHeader(http.StatusEarlyHints)
	w.WriteHeader(http.StatusOK)
	if got := rec.Result().Header.Values("Ratelimit"); !slices.Equal(got, []string{ourRateLimit}) {
		t.Errorf("RateLimit %q, want once %q", got, ourRateLimit)
	}
	if got := rec.Result().Header.Values("Ratelimit-Policy"); !slices.Equal(got, []string{ourPolicy}) {
		t.Errorf("RateLimit-Policy %q, want once %q", got, ourPolicy)
	}
}

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
