package h1server

import (
	"context"
	"slices"
	"sync"
)

// requestContext is the context of a connection's requests. It is done
// when the client goes away during a handler (the disconnect watch), when
// the connection ends, and — once anybody has looked at it — when the
// handler returns, as net/http's request context is.
//
// One that nobody looked at during a request (no Done, Err or AfterFunc:
// the usual case, nothing on floodgate's request path waits on it) cannot
// have told anybody anything, so it serves the connection's next request
// too, and so does the *http.Request that carries it: a context and a
// request copy fewer to allocate for every request. The one difference a
// handler can see: a goroutine that takes the context without looking at
// it, and first looks after the handler has returned, finds it not done
// (the next request's) rather than canceled. Nothing in floodgate does
// that; a handler must not keep its *http.Request past its return anyway.
type requestContext struct {
	context.Context // the connection's: its values, and its end (stopParent)

	// stopParent undoes the AfterFunc that cancels this context when the
	// parent ends: a base context that can end (Server.BaseContext) ends
	// its requests, as with net/http. Nil when the parent cannot end.
	stopParent func() bool

	mu     sync.Mutex
	looked bool          // Done, Err or AfterFunc was called
	err    error         // context.Canceled once done
	done   chan struct{} // made by the first Done
	afters []*afterFunc  // AfterFunc's, until done
}

type afterFunc struct{ f func() }

func newRequestContext(parent context.Context) *requestContext {
	c := &requestContext{Context: parent}
	if parent.Done() != nil {
		c.stopParent = context.AfterFunc(parent, c.cancel)
	}
	return c
}

func (c *requestContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.looked = true
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

func (c *requestContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.looked = true
	return c.err
}

// AfterFunc is what context.AfterFunc, and context.WithCancel of this
// context, use instead of a goroutine waiting on Done: f runs in a
// goroutine of its own once the context is done.
func (c *requestContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.looked = true
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afters = append(c.afters, a)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.afters, a)
		if i < 0 {
			return false // ran, or was stopped before
		}
		c.afters = slices.Delete(c.afters, i, i+1)
		return true
	}
}

func (c *requestContext) String() string { return "h1server.requestContext" }

// cancel makes the context done (if it was not).
func (c *requestContext) cancel() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.Canceled
	if c.done != nil {
		close(c.done)
	}
	afters := c.afters
	c.afters = nil
	c.mu.Unlock()
	for _, a := range afters {
		go a.f()
	}
	if c.stopParent != nil {
		c.stopParent()
	}
}

// end is called when a handler has returned: it reports whether the
// context may serve the next request, and cancels it otherwise (once
// looked at, or done, it is finished).
func (c *requestContext) end() (reusable bool) {
	c.mu.Lock()
	reusable = !c.looked && c.err == nil
	c.mu.Unlock()
	if !reusable {
		c.cancel()
	}
	return reusable
}
