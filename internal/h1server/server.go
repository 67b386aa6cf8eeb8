// Package h1server serves an http.Handler over plain-text HTTP/1.x with
// less work per request than net/http's server, for floodgate's public and
// internal listeners: with net/http's server, the public side was ~40 % of
// a forwarded request's time (docs/benchmarks.md).
//
// What it keeps from net/http: the request parser (http.ReadRequest: the
// request line, headers, Content-Length and chunked bodies, and the
// request-smuggling checks that go with them), the Handler, ResponseWriter,
// Flusher, Hijacker and ResponseController interfaces, the checks net/http's
// server adds (header names and values, protocol version), its keep-alive
// rules, Expect: 100-continue, and graceful shutdown.
//
// What it adds, and holds net/http's server to as well (NetHTTPServer):
// floodgate's request policy (internal/httpsyntax: Head.Refuse, RefuseHost,
// CloseAfter), judged from the head's bytes since Go's parser drops what it
// needs — ambiguous framing refused, CONNECT refused, one Host policy, the
// head's size held exactly to MaxHeaderBytes.
//
// What it does differently, which is where the time goes:
//   - the handler runs on the connection's goroutine, and a response that
//     the handler finishes within 8 KiB is sent with its Content-Length in one
//     write;
//   - net/http starts a goroutine and a read on the connection for every
//     request, to notice a client that goes away; here that watch starts only
//     when a handler is still running after DisconnectCheck (50 ms): fast
//     answers never pay for it, slow ones (an upstream building a file) are
//     still cancelled when their client leaves;
//   - header maps and buffers are reused from one request to the next on a
//     connection, and so are the *http.Request, its URL, header map and
//     context while nobody looks at the context (requestContext: one looked
//     at is canceled when the handler returns, as net/http's, and the next
//     request gets its own).
//
// The handler's contract is therefore stricter than net/http's in one
// respect, and floodgate's handlers keep it: nothing may keep the
// *http.Request, its URL or its header (a copy made by WithContext shares
// them) once ServeHTTP has returned — the connection's next request,
// perhaps another user's behind a load balancer, is read into them — and a
// goroutine that outlives the handler must look at the request's context
// before the handler returns if it is to see it done (Done, Err or
// AfterFunc; taken and first looked at later, it is the next request's).
// Clone what must outlive the handler (Request.Clone copies the URL and
// header). The gateway, the forwarder and httputil.ReverseProxy finish
// with the request before they return (the proxy's transport works on a
// clone and its context is looked at), and request_reuse_test.go holds
// the server's side.
//
// TLS and HTTP/2 stay with net/http's server.
package h1server

import (
	"bufio"
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DisconnectCheck is how long a handler may run before the server starts
// watching its connection for the client going away (which cancels the
// request's context).
const DisconnectCheck = 50 * time.Millisecond

// A RefusalObserver is told of every answer a server gives a request
// itself, without its handler: a request it refused (400, 417, 431, 501,
// 505 …), on either engine (Server, NetHTTPServer, and RefuseConnect's
// 501). A Handler that implements it is told, so that whoever counts the
// handler's answers can count these too: they are answers sent on the
// same listener. Refused is called once per answer, just before it is
// written, on the connection's goroutine: it must be safe for concurrent
// use. The answer to "OPTIONS *" is the server's, not a refusal, and is
// not reported.
type RefusalObserver interface {
	Refused(code int)
}

// refused tells h of a refusal, if h observes them.
func refused(h http.Handler, code int) {
	if o, ok := h.(RefusalObserver); ok {
		o.Refused(code)
	}
}

// Server serves HTTP/1.x. Its exported fields mean what http.Server's of the
// same name mean; set them before Serve.
type Server struct {
	// Handler serves the requests; if it is a RefusalObserver, it is also
	// told of each request the server refuses itself.
	Handler http.Handler

	// ReadHeaderTimeout bounds the time from a request's first byte to the
	// end of its head (slowloris). Zero: no limit.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive connection after that long without a
	// request. Zero: ReadHeaderTimeout if set, else no limit.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's head (its line, fields and line
	// ends), exactly: one byte more is 431. Zero: 64 KiB.
	MaxHeaderBytes int
	// ErrorLog receives handler panics and accept errors. Nil: the log
	// package's standard logger.
	ErrorLog *log.Logger
	// BaseContext, if set, gives the base context of the requests of a
	// listener.
	BaseContext func(net.Listener) context.Context
	// IdleBuffersUpTo is how many connections may be open before those
	// waiting for a request give their buffers back (4 KiB to read,
	// 16 KiB to write): beyond it, a waiting connection holds none and
	// reads the first byte of its next request alone, which costs a
	// request one read more. Zero: DefaultIdleBuffersUpTo; negative: a
	// waiting connection never holds them.
	IdleBuffersUpTo int

	mu         sync.Mutex
	listeners  map[*net.Listener]struct{}
	conns      map[*conn]struct{}
	open       atomic.Int64 // len(conns), read without mu
	inShutdown atomic.Bool
	connsDone  *sync.Cond // signalled when a connection ends

	disconnects disconnectWatch
}

// Serve accepts connections on ln and serves each on its own goroutine. It
// returns http.ErrServerClosed after Shutdown or Close, and otherwise the
// listener's error. ln is closed when Serve returns.
func (s *Server) Serve(ln net.Listener) error {
	if s.Handler == nil {
		return errors.New("h1server: nil Handler")
	}
	l := &ln
	if !s.track(l, true) {
		return http.ErrServerClosed
	}
	defer s.track(l, false)
	defer ln.Close()
	base := context.Background()
	if s.BaseContext != nil {
		base = s.BaseContext(ln)
	}
	// Handlers find the server in their request's context as under
	// net/http: ReverseProxy and internal/forward abort an answer whose
	// upstream broke mid-body (panic(http.ErrAbortHandler)) only then,
	// instead of ending it as if it were complete. The http.Server here
	// carries this server's settings; it never serves.
	base = context.WithValue(base, http.ServerContextKey, &http.Server{
		Handler:           s.Handler,
		ReadHeaderTimeout: s.ReadHeaderTimeout,
		IdleTimeout:       s.IdleTimeout,
		MaxHeaderBytes:    s.maxHeaderBytes(),
		ErrorLog:          s.ErrorLog,
	})
	var delay time.Duration
	for {
		rw, err := ln.Accept()
		if err != nil {
			if s.inShutdown.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: back off as
				// net/http does (5 ms doubling to 1 s).
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.logf("h1server: accept error: %v; retrying in %v", err, delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		c := newConn(s, rw, base)
		if !s.trackConn(c, true) {
			rw.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Shutdown stops accepting connections, closes idle ones, and waits until
// every request in flight has been answered and its connection closed, or
// until ctx ends (then it returns ctx's error and leaves the rest to Close).
func (s *Server) Shutdown(ctx context.Context) error {
	s.inShutdown.Store(true)
	s.mu.Lock()
	s.closeListenersLocked()
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.cond().Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for c := range s.conns {
			c.closeIfIdle()
		}
		if len(s.conns) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Woken when a connection ends or ctx does; idle connections
		// that were busy a moment ago are closed on the next turn.
		s.waitLocked(ctx)
	}
}

// waitLocked waits for a connection to end, for at most 100 ms (a
// connection that turns idle does not signal).
func (s *Server) waitLocked(ctx context.Context) {
	t := time.AfterFunc(100*time.Millisecond, func() {
		s.mu.Lock()
		s.cond().Broadcast()
		s.mu.Unlock()
	})
	s.cond().Wait()
	t.Stop()
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.inShutdown.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeListenersLocked()
	for c := range s.conns {
		c.rwc.Close()
	}
	return nil
}

func (s *Server) cond() *sync.Cond {
	if s.connsDone == nil {
		s.connsDone = sync.NewCond(&s.mu)
	}
	return s.connsDone
}

func (s *Server) closeListenersLocked() {
	for l := range s.listeners {
		(*l).Close()
	}
}

func (s *Server) track(l *net.Listener, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.inShutdown.Load() {
			return false
		}
		if s.listeners == nil {
			s.listeners = map[*net.Listener]struct{}{}
		}
		s.listeners[l] = struct{}{}
	} else {
		delete(s.listeners, l)
	}
	return true
}

func (s *Server) trackConn(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.inShutdown.Load() {
			return false
		}
		if s.conns == nil {
			s.conns = map[*conn]struct{}{}
		}
		s.conns[c] = struct{}{}
	} else {
		delete(s.conns, c)
	}
	s.open.Store(int64(len(s.conns)))
	if !add {
		s.cond().Broadcast()
	}
	return true
}

func (s *Server) logf(format string, args ...any) {
	if s.ErrorLog != nil {
		s.ErrorLog.Printf(format, args...)
	} else {
		log.Printf(format, args...)
	}
}

func (s *Server) maxHeaderBytes() int {
	if s.MaxHeaderBytes > 0 {
		return s.MaxHeaderBytes
	}
	return 64 << 10
}

// DefaultIdleBuffersUpTo is Server.IdleBuffersUpTo's default: up to 256
// connections, those waiting for a request keep their buffers and read
// each request in one read. A connection decides when it starts to wait,
// so those already waiting when more arrive keep theirs until their next
// request: 5 MiB at most.
const DefaultIdleBuffersUpTo = 256

// lean reports whether a connection waiting for a request gives its
// buffers back (IdleBuffersUpTo).
func (s *Server) lean() bool {
	n := s.IdleBuffersUpTo
	if n == 0 {
		n = DefaultIdleBuffersUpTo
	}
	return s.open.Load() > int64(n)
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return s.ReadHeaderTimeout
}

// bufioWriterPool keeps the writers of connections that ended.
var bufioReaderPool, bufioWriterPool sync.Pool

func newBufioReader(r *connReader) *bufio.Reader {
	if br, ok := bufioReaderPool.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, 4<<10)
}

func newBufioWriter(c net.Conn) *bufio.Writer {
	if bw, ok := bufioWriterPool.Get().(*bufio.Writer); ok {
		bw.Reset(c)
		return bw
	}
	return bufio.NewWriterSize(c, 16<<10)
}
