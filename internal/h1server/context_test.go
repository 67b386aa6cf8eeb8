package h1server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// A handler's context that anybody looked at is done when the handler
// returns, as net/http's is: its Done channel, a context derived from it
// and an AfterFunc all hear of it, without a goroutine per derived context
// (requestContext.AfterFunc). The next request on the connection gets a
// context of its own, not done while it runs.
func TestRequestContextDoneWhenHandlerReturns(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			type seen struct {
				ctx, child context.Context
				done       <-chan struct{}
				after      chan struct{}
				errDuring  error
			}
			seens := make(chan seen, 2)
			s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				child, cancel := context.WithCancel(ctx)
				_ = cancel // canceled by its parent
				after := make(chan struct{})
				context.AfterFunc(ctx, func() { close(after) })
				seens <- seen{ctx: ctx, child: child, done: ctx.Done(), after: after, errDuring: ctx.Err()}
				io.WriteString(w, "ok")
			}))
			addr, _ := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, get11+get11)
			var got [2]seen
			for i := range got {
				readAnswer(t, br, "GET")
				got[i] = wait(t, seens, "the handler")
			}
			for i, s := range got {
				if s.errDuring != nil {
					t.Errorf("request %d: context done while its handler ran: %v", i, s.errDuring)
				}
				wait(t, s.done, "the context's Done after the handler returned")
				wait(t, s.child.Done(), "a context derived from it")
				wait(t, s.after, "its AfterFunc")
				if err := s.ctx.Err(); !errors.Is(err, context.Canceled) {
					t.Errorf("request %d: Err after the handler = %v, want context.Canceled", i, err)
				}
			}
			if got[0].ctx == got[1].ctx {
				t.Error("the second request was handed the first one's (done) context")
			}
		})
	}
}

// An AfterFunc stopped while the handler runs never runs.
func TestRequestContextAfterFuncStopped(t *testing.T) {
	for _, k := range serverKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			ran := make(chan struct{}, 1)
			stopped := make(chan bool, 1)
			s := k.new(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				stop := context.AfterFunc(r.Context(), func() { ran <- struct{}{} })
				stopped <- stop()
			}))
			addr, _ := serveKind(t, s, nil)
			c, br := dial(t, addr)
			io.WriteString(c, get11)
			readAnswer(t, br, "GET")
			if !wait(t, stopped, "the handler") {
				t.Error("stop reported the function already run or stopped")
			}
			// A second request: by its answer the first's context is done.
			io.WriteString(c, get11)
			readAnswer(t, br, "GET")
			select {
			case <-ran:
				t.Error("a stopped AfterFunc ran")
			default:
			}
		})
	}
}

// A context nobody looked at serves the next request too, and so does the
// request that carries it (the saving; TestRequestPathAllocations counts
// it); it is done when the connection ends.
func TestRequestContextReusedUntilLookedAt(t *testing.T) {
	type handed struct {
		r   *http.Request
		ctx context.Context
	}
	hs := make(chan handed, 3)
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs <- handed{r, r.Context()}
		if r.URL.Path == "/look" {
			r.Context().Err()
		}
	})}
	addr, _ := serveKind(t, s, nil)
	c, br := dial(t, addr)
	var got []handed
	for _, path := range []string{"/", "/look", "/"} {
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		readAnswer(t, br, "GET")
		got = append(got, wait(t, hs, "the handler"))
	}
	if got[0].r != got[1].r || got[0].ctx != got[1].ctx {
		t.Error("a context nobody looked at was not reused for the next request")
	}
	if got[2].r == got[1].r || got[2].ctx == got[1].ctx {
		t.Error("a context looked at was reused for the next request")
	}
	if err := got[1].ctx.Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("the looked-at context after its handler: %v, want context.Canceled", err)
	}
	c.Close()
	deadline := time.Now().Add(safetyDeadline)
	for got[2].ctx.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("safety deadline: the last request's context is not done after the connection ended")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRequestContextUnit(t *testing.T) {
	parent := context.WithValue(context.Background(), http.LocalAddrContextKey, "here")

	c := newRequestContext(parent)
	if c.Value(http.LocalAddrContextKey) != "here" {
		t.Error("the connection's values are not the request's")
	}
	if !c.end() {
		t.Error("a context nobody looked at is not reusable")
	}
	if c.err != nil {
		t.Error("end canceled a reusable context")
	}

	c = newRequestContext(parent)
	stop := c.AfterFunc(func() {})
	if !stop() || stop() {
		t.Error("stop: want true once, then false")
	}
	ran := make(chan struct{})
	c.AfterFunc(func() { close(ran) })
	if c.end() {
		t.Error("a context looked at is reusable")
	}
	wait(t, ran, "the AfterFunc")
	if c.Err() != context.Canceled || context.Cause(c) != context.Canceled {
		t.Errorf("Err %v, Cause %v: want context.Canceled", c.Err(), context.Cause(c))
	}
	wait(t, c.Done(), "Done of a context done before Done was asked for")
	c.cancel() // twice: nothing happens

	late := make(chan struct{})
	if c.AfterFunc(func() { close(late) })() {
		t.Error("stop of an AfterFunc registered after the end reports it stopped")
	}
	wait(t, late, "an AfterFunc registered after the end")
	if _, ok := c.Deadline(); ok {
		t.Error("a request context with a deadline")
	}
}
