package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floodgate/floodgate/ratelimit/memory"
)

// clock is the memory store's clock, stepped by the test: no sleeping.
type clock struct{ ns atomic.Int64 }

func (c *clock) Now() time.Time   { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Set(t time.Time)  { c.ns.Store(t.UnixNano()) }
func at(hh, mm, ss int) time.Time { return time.Date(2026, 9, 28, hh, mm, ss, 0, time.UTC) }
func newTestAPI(t *testing.T, c *clock) (http.Handler, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	api, err := newAPI(memory.New(memory.Options{Now: c.Now}), slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return api, &logs
}

func publishAs(api http.Handler, user, urn string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/score-sets/"+urn+"/publish", nil)
	if user != "" {
		req.Header.Set("X-User", user)
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec
}

// TestQuota: a user's 21st publication within an hour is refused with
// 429, and another user is not affected.
func TestQuota(t *testing.T) {
	c := &clock{}
	api, logs := newTestAPI(t, c)

	// alice publishes 20 score sets between 12:00 and 12:57, one every 3 minutes.
	for i := range 20 {
		c.Set(at(12, 3*i, 0))
		if rec := publishAs(api, "alice", "urn:mavedb:00000001-a-1"); rec.Code != http.StatusAccepted {
			t.Fatalf("publication %d at %s: %d, want 202\n%s", i+1, c.Now().Format(time.TimeOnly), rec.Code, rec.Body)
		}
	}

	// The 21st, at 12:59, is refused.
	c.Set(at(12, 59, 0))
	rec := publishAs(api, "alice", "urn:mavedb:00000001-a-1")
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("21st publication: %d, want 429\n%s", rec.Code, rec.Body)
	}
	// With the default sliding window, the hour's 20 weigh 20×(60m−e)/60m
	// at e into the next hour: room for one more at 13:03, 4 minutes on.
	if got, want := rec.Header().Get("Retry-After"), "240"; got != want {
		t.Errorf("Retry-After = %q, want %q", got, want)
	}
	var problem struct {
		Type, Rule string
		Status     int
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &problem); err != nil || problem.Status != 429 ||
		problem.Rule != "score-set-publications" || !strings.HasSuffix(problem.Type, "#quota-exceeded") {
		t.Errorf("body = %s (%v), want a quota-exceeded problem for score-set-publications", rec.Body, err)
	}
	if got, want := rec.Header().Get("RateLimit-Policy"), `"score-set-publications";q=20;w=3600`; got != want {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}

	// bob is not affected.
	rec = publishAs(api, "bob", "urn:mavedb:00000002-a-1")
	if rec.Code != http.StatusAccepted {
		t.Errorf("bob's publication: %d, want 202", rec.Code)
	}
	// t: the quota resets when the window ends at 13:00.
	if got, want := rec.Header().Get("RateLimit"), `"score-set-publications";r=19;t=60`; got != want {
		t.Errorf("bob's RateLimit = %q, want %q", got, want)
	}

	// Refused is refused from anywhere, and consumes nothing: at 13:03 alice may publish again.
	c.Set(at(13, 2, 59))
	if rec := publishAs(api, "alice", "urn:mavedb:00000003-a-1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("alice at 13:02:59: %d, want 429", rec.Code)
	}
	c.Set(at(13, 3, 0))
	if rec := publishAs(api, "alice", "urn:mavedb:00000003-a-1"); rec.Code != http.StatusAccepted {
		t.Errorf("alice at 13:03: %d, want 202", rec.Code)
	}

	// The refusals were logged without the user's name.
	if !strings.Contains(logs.String(), `"decision":"blocked"`) || strings.Contains(logs.String(), "alice") {
		t.Errorf("log:\n%s", logs)
	}
}

// TestBurst: 20 publications at once are admitted, the 21st a minute later
// is not.
func TestBurst(t *testing.T) {
	c := &clock{}
	api, _ := newTestAPI(t, c)
	c.Set(at(12, 30, 0))
	for i := range 20 {
		if rec := publishAs(api, "alice", "urn:mavedb:00000001-a-1"); rec.Code != http.StatusAccepted {
			t.Fatalf("publication %d: %d", i+1, rec.Code)
		}
	}
	c.Set(at(12, 31, 0))
	if rec := publishAs(api, "alice", "urn:mavedb:00000001-a-1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("21st publication: %d, want 429", rec.Code)
	}
}

// TestAnonymous: without a user the request is not counted, and the
// handler asks for authentication.
func TestAnonymous(t *testing.T) {
	c := &clock{}
	c.Set(at(12, 0, 0))
	api, _ := newTestAPI(t, c)
	for range 25 {
		if rec := publishAs(api, "", "urn:mavedb:00000001-a-1"); rec.Code != http.StatusUnauthorized {
			t.Fatalf("anonymous publication: %d, want 401", rec.Code)
		}
	}
	if rec := publishAs(api, "alice", "urn:mavedb:00000001-a-1"); rec.Code != http.StatusAccepted {
		t.Errorf("alice after anonymous attempts: %d, want 202", rec.Code)
	}
	req := httptest.NewRequest("GET", "/score-sets/urn:mavedb:00000001-a-1", nil)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("GET: %d, want 200", rec.Code)
	}
}

// TestRun starts the program on a free port and stops it.
func TestRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-listen", addr}, io.Discard) }()

	var resp *http.Response
	for range 100 {
		req, _ := http.NewRequest("POST", "http://"+addr+"/score-sets/urn:mavedb:00000001-a-1/publish", nil)
		req.Header.Set("X-User", "alice")
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // waiting for the listener, not for a limiter
	}
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("RateLimit") == "" {
		t.Errorf("POST: %s, RateLimit %q", resp.Status, resp.Header.Get("RateLimit"))
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
}
