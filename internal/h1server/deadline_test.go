package h1server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// The read deadline of a request's head stays set while its handler runs
// until something reads (connReader.handling). These tests let it pass
// before the handler reads: what they assert holds whatever the timing
// (a slow machine only makes the deadline more surely past), and fails if
// the head's deadline reaches the handler's reads.

const shortTimeout = 10 * time.Millisecond

// pastShortTimeout waits until a deadline of shortTimeout set when the
// head arrived is surely past, and (on a machine that is not very slow)
// before the disconnect watch starts (DisconnectCheck), which clears it.
func pastShortTimeout() { time.Sleep(3 * shortTimeout) }

// contextEnd waits for r's context to be done and returns its error, or an
// error of its own at the safety deadline.
func contextEnd(r *http.Request) error {
	select {
	case <-r.Context().Done():
		return r.Context().Err()
	case <-time.After(safetyDeadline):
		return errors.New("context not canceled before the safety deadline")
	}
}

func shortTimeoutServer(t *testing.T, h http.HandlerFunc) string {
	return startServer(t, &Server{Handler: h, ReadHeaderTimeout: shortTimeout, IdleTimeout: shortTimeout})
}

// A body sent after the head's deadline has passed reaches the handler.
func TestHeadDeadlineSparesTheBody(t *testing.T) {
	entered := make(chan struct{})
	got := make(chan string, 1)
	addr := shortTimeoutServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		pastShortTimeout()
		b, err := io.ReadAll(r.Body)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(b)
	})
	c, br := dialT(t, addr)
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n")
	wait(t, entered, "the handler")
	io.WriteString(c, "hello")
	if b := wait(t, got, "the handler's read"); b != "hello" {
		t.Errorf("the handler read %q, want hello", b)
	}
	answerOf(t, br)
}

// The disconnect watch's read is not cut short by the head's deadline: a
// client leaving a handler that outlives it still cancels the context.
func TestHeadDeadlineSparesTheDisconnectWatch(t *testing.T) {
	entered := make(chan struct{})
	got := make(chan error, 1)
	addr := shortTimeoutServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		got <- contextEnd(r)
	})
	c, _ := dialT(t, addr)
	io.WriteString(c, get11)
	wait(t, entered, "the handler")
	pastShortTimeout()
	c.Close()
	if err := wait(t, got, "the handler's verdict"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler's context: %v, want context.Canceled", err)
	}
}

// After a handler that outlived the head's deadline, the connection reads
// its next request (the next head gets a deadline of its own), and an
// idle one is still closed.
func TestHeadDeadlineAfterALongHandler(t *testing.T) {
	addr := shortTimeoutServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			pastShortTimeout()
		}
		io.WriteString(w, r.URL.Path)
	})
	c, br := dialT(t, addr)
	for _, path := range []string{"/slow", "/next", "/slow", "/next"} {
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		if code, body := answerOf(t, br); code != 200 || body != path {
			t.Fatalf("%s: %d %q", path, code, body)
		}
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle connection: read %v, want EOF (closed by the server)", err)
	}
}
