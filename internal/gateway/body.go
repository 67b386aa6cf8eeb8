package gateway

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/respond"
)

// A bodyFault is what went wrong with a client's request body.
type bodyFault int32

const (
	bodyOK        bodyFault = iota
	bodyMalformed           // not valid HTTP/1.1 framing (a bad chunk): 400
	bodyGone                // the connection ended before the body did: nobody to answer
	bodyTimeout             // the client was silent for body_read_timeout, or past the route's total: 408
	bodyTooLarge            // over max_body_bytes: 413
)

// errBodyTooLarge is the error a clientBody returns past its limit.
var errBodyTooLarge = errors.New("gateway: request body over max_body_bytes")

// clientBody is a request body as it is read for the upstream (by the
// forwarder, a ReverseProxy, or request buffering). It counts the bytes
// against the route's max_body_bytes, gives each read body_read_timeout
// and no more than the request's deadline (the route's total timeout
// covers the body too), and notes its own failures: a failed exchange is
// then the client's (400, 408, 413), not the upstream's (502, 504).
//
// Read is called by one goroutine at a time (possibly not the handler's:
// the forwarder writes large bodies from a goroutine of its own); fault
// may be read by any.
type clientBody struct {
	rc  io.ReadCloser
	dl  readDeadliner // nil: reads are not bounded in time
	max int64         // bytes allowed
	n   int64         // bytes read

	timeout time.Duration // between two reads; 0: none
	until   time.Time     // the request's deadline; zero: none
	armed   atomic.Bool   // a read deadline is set on the connection

	fault atomic.Int32 // a bodyFault
	// deadline is the read deadline last set, in Unix nanoseconds: a
	// failure found after it is the deadline's (net/http's server
	// cancels the request's context as the read fails, and the forwarder
	// may see that before the read returns).
	deadline atomic.Int64
}

// readDeadliner is the server's ResponseWriter (net/http's and
// h1server's both have the method ResponseController uses).
type readDeadliner interface {
	SetReadDeadline(time.Time) error
}

// findReadDeadliner unwraps w to the server's writer that can set the
// connection's read deadline, or nil.
func findReadDeadliner(w http.ResponseWriter) readDeadliner {
	for {
		if d, ok := w.(readDeadliner); ok {
			return d
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}

func (b *clientBody) Read(p []byte) (int, error) {
	if b.fault.Load() != int32(bodyOK) {
		return 0, errBodyFailed
	}
	if room := b.max - b.n + 1; int64(len(p)) > room {
		// One byte more than allowed tells a body over the limit from
		// one exactly at it.
		p = p[:room]
	}
	if b.dl != nil && (b.timeout > 0 || !b.until.IsZero()) {
		d := b.until
		if b.timeout > 0 {
			if t := time.Now().Add(b.timeout); d.IsZero() || t.Before(d) {
				d = t
			}
		}
		b.deadline.Store(d.UnixNano())
		b.armed.Store(true)
		b.dl.SetReadDeadline(d)
	}
	n, err := b.rc.Read(p)
	b.n += int64(n)
	switch {
	case b.n > b.max:
		b.fail(bodyTooLarge)
		n -= int(b.n - b.max)
		b.n = b.max
		return n, errBodyTooLarge
	case err == io.EOF:
		b.disarm()
	case err != nil:
		b.fail(classifyBodyError(err))
	}
	return n, err
}

var errBodyFailed = errors.New("gateway: request body failed")

// classifyBodyError tells a read deadline, a connection that ended, and
// a malformed body apart.
func classifyBodyError(err error) bodyFault {
	var ne net.Error
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return bodyTimeout
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), isConnReset(err):
		return bodyGone
	}
	return bodyMalformed
}

func isConnReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "read"
}

func (b *clientBody) fail(f bodyFault) {
	b.fault.CompareAndSwap(int32(bodyOK), int32(f))
	b.disarm()
}

// disarm clears the read deadline: the server's own reads (the check for
// a client that left, the next request's head) must not inherit it.
func (b *clientBody) disarm() {
	b.deadline.Store(0)
	if b.armed.Swap(false) {
		b.dl.SetReadDeadline(time.Time{})
	}
}

func (b *clientBody) Close() error { return b.rc.Close() }

// unreadLinger bounds how long a connection whose request body is left
// unread stays open after its answer: what the client sends meanwhile is
// read and dropped, as floodgate's server does before it closes a
// connection (so that a reset does not destroy the answer), then the
// connection ends.
const unreadLinger = 500 * time.Millisecond

// boundUnreadBody bounds the wait for a request body the gateway never
// read (the request was refused: 403, 404, 429, a route's 503): both
// servers read up to 256 KiB of it before they send the answer, to keep
// the connection, with no deadline of their own. A client that declared
// a body and sends none would otherwise hold its connection, and never
// get its answer, for as long as it liked: it gets body_read_timeout, as
// a body read for the upstream does, and the connection then ends after
// the answer. A body read for the upstream has its deadline from its
// last read (clientBody).
func (g *Gateway) boundUnreadBody(sw *statusWriter) {
	if sw.body != nil || sw.lingers || g.bodyTimeout <= 0 {
		return
	}
	if d := findReadDeadliner(sw.ResponseWriter); d != nil {
		d.SetReadDeadline(time.Now().Add(g.bodyTimeout))
	}
}

// endAfterAnswer makes the connection end after the answer being written
// to w, whatever is left of the request's body. Connection: close alone
// is not enough on Go's server (server.engine: net/http): after the
// handler returns it reads what is left of a body of up to 256 KiB, to
// reuse the connection, with no deadline: a client that declared a body
// over max_body_bytes and sends none, or stopped sending one, would hold
// the connection until it left. The read deadline bounds that wait.
func endAfterAnswer(w http.ResponseWriter) {
	w.Header()["Connection"] = []string{"close"}
	if sw, ok := w.(*statusWriter); ok {
		sw.lingers = true
	}
	if d := findReadDeadliner(w); d != nil {
		d.SetReadDeadline(time.Now().Add(unreadLinger))
	}
}

// failure reports what went wrong with the body, if anything: a fault the
// body noted, or a read deadline that has passed (its read may not have
// returned yet).
func (b *clientBody) failure(now time.Time) bodyFault {
	if f := bodyFault(b.fault.Load()); f != bodyOK {
		return f
	}
	if d := b.deadline.Load(); d != 0 && now.UnixNano() >= d {
		return bodyTimeout
	}
	return bodyOK
}

// answer is the answer to a request whose body failed, and whether there
// is one: nothing for a client that has gone.
func (f bodyFault) answer() (respond.Kind, bool) {
	switch f {
	case bodyMalformed:
		return respond.BadRequest, true
	case bodyTimeout:
		return respond.RequestTimeout, true
	case bodyTooLarge:
		return respond.ContentTooLarge, true
	}
	return 0, false
}

// bufferBody reads r's body (b) whole, in memory up to g.bufferBytes and
// the rest in a temporary file, and makes it r's body, with its length
// declared. It reports false when it has answered the request instead:
// the body failed (400, 408, 413; nothing for a client that left), or the
// temporary file could not be written (500).
func (g *Gateway) bufferBody(sw *statusWriter, r *http.Request, b *clientBody) bool {
	// Grown as the body arrives: a slow client that declares a large
	// body costs only what it has sent.
	first := int64(4 << 10)
	if r.ContentLength > 0 {
		first = min(first, r.ContentLength)
	}
	mem := make([]byte, 0, min(first, g.bufferBytes))
	var file *os.File
	var err error
	for {
		if len(mem) == cap(mem) {
			if int64(len(mem)) >= g.bufferBytes {
				break
			}
			mem = slices.Grow(mem, int(min(g.bufferBytes, 2*int64(cap(mem))))-len(mem))
		}
		var n int
		n, err = b.Read(mem[len(mem):cap(mem)])
		mem = mem[:len(mem)+n]
		if err != nil {
			break
		}
	}
	size := int64(len(mem))
	if err == nil {
		// Over the memory bound: the rest goes to a file, unlinked at
		// once so that nothing is left behind whatever happens.
		file, err = os.CreateTemp("", "floodgate-body-*")
		if err != nil {
			g.failures.BodyBuffer(sw.routeName(), err)
			g.answers.Write(sw, r, respond.Answer{Kind: respond.InternalError})
			return false
		}
		os.Remove(file.Name())
		var n int64
		if _, err = file.Write(mem); err == nil {
			n, err = io.CopyBuffer(onlyWriter{file}, b, mem[:cap(mem)])
		}
		size += n
		if err == nil {
			err = io.EOF
		}
	}
	if err != io.EOF {
		if file != nil {
			file.Close()
		}
		if f := b.failure(time.Now()); f != bodyOK {
			if kind, ok := f.answer(); ok {
				endAfterAnswer(sw)
				g.answers.Write(sw, r, respond.Answer{Kind: kind})
			} else {
				sw.own = true
				sw.WriteHeader(499) // the client is gone
			}
			return false
		}
		if file != nil { // the client's body was whole: the file failed
			g.failures.BodyBuffer(sw.routeName(), err)
		}
		g.answers.Write(sw, r, respond.Answer{Kind: respond.InternalError})
		return false
	}
	// The client's Expect: 100-continue has been answered: the upstream
	// gets the body at once.
	delete(r.Header, "Expect")
	r.TransferEncoding = nil
	r.ContentLength = size
	switch {
	case size == 0:
		r.Body = http.NoBody
	case file == nil:
		r.Body = io.NopCloser(bytes.NewReader(mem))
	default:
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			g.failures.BodyBuffer(sw.routeName(), err)
			file.Close()
			g.answers.Write(sw, r, respond.Answer{Kind: respond.InternalError})
			return false
		}
		r.Body = file
	}
	return true
}

// onlyWriter hides an *os.File's ReadFrom, so that io.CopyBuffer uses the
// buffer given (and reads through the clientBody's bounds).
type onlyWriter struct{ io.Writer }
