package forward

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// moreLineCases extend lineCases (lines_test.go) with upstream answers
// the differential test did not cover.
var moreLineCases = []struct {
	name, method, resp string
	proto              string // of the client's request; default HTTP/1.1
}{
	{name: "http/1.0 upstream keep-alive", resp: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok"},
	{name: "http/1.0 upstream close-delimited", resp: "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close"},
	{name: "http/1.0 upstream te and length", resp: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\nok"},
	{name: "head chunked and length", method: "HEAD", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 7\r\n\r\n"},
	{name: "head length 0", method: "HEAD", resp: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
	{name: "early hints then answer", resp: "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nok"},
	{name: "odd token names", resp: "HTTP/1.1 200 OK\r\nx_under: 1\r\n!#$%&'*+-.^_`|~: 2\r\nX-Empty:\r\nContent-Length: 2\r\n\r\nok"},
	{name: "content-encoding empty", resp: "HTTP/1.1 200 OK\r\nContent-Encoding: \r\nContent-Length: 15\r\n\r\n<html>hi</html>"},
	{name: "unusual status", resp: "HTTP/1.1 299 Whatever\r\nContent-Length: 2\r\n\r\nok"},
	{name: "205", resp: "HTTP/1.1 205 Reset Content\r\nContent-Length: 0\r\n\r\n"},
	{name: "http/1.0 client, chunked upstream", proto: "HTTP/1.0", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"},
	{name: "http/1.0 client, length", proto: "HTTP/1.0", resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{name: "undeclared trailer", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n"},
	{name: "trailer on a length body", resp: "HTTP/1.1 200 OK\r\nTrailer: X-Sum\r\nContent-Length: 2\r\n\r\nok"},
	{name: "date from upstream", resp: "HTTP/1.1 200 OK\r\nDate: Mon, 30 Nov 2026 17:20:00 GMT\r\nContent-Length: 2\r\n\r\nok"},
}

// TestMoreHeaderLinesAsHeaderMap is TestHeaderLinesAsHeaderMap over
// more upstream answers, each followed by a second request on the same
// client connection (a framing mistake on the first answer shows there).
func TestMoreHeaderLinesAsHeaderMap(t *testing.T) {
	const probe = "HTTP/1.1 200 OK\r\nX-Probe: 1\r\nContent-Length: 5\r\n\r\nprobe"
	up := newRawUpstream(t, func(r *http.Request) (string, bool) {
		if r.URL.Path == "/probe" {
			return probe, false
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/c/"))
		resp := moreLineCases[i].resp
		return resp, strings.HasPrefix(resp, "HTTP/1.0") && !strings.Contains(resp, "keep-alive")
	})
	el := newErrorLog()
	f := newForwarder(t, up.url, Options{}, el)
	linesAddr, mapAddr, taken := linesAndMapFronts(t, f)
	for i, tc := range moreLineCases {
		method := cmpOrString(tc.method, "GET")
		proto := cmpOrString(tc.proto, "HTTP/1.1")
		conn := ""
		if proto == "HTTP/1.0" {
			conn = "Connection: keep-alive\r\n"
		}
		req := method + " /c/" + strconv.Itoa(i) + " " + proto + "\r\nHost: x\r\n" + conn + "\r\n"
		before := taken.Load()
		got := rawDoTwice(t, linesAddr, method, req, "GET /probe "+proto+"\r\nHost: x\r\n"+conn+"\r\n")
		if taken.Load() == before {
			t.Errorf("%s: not passed on as lines", tc.name)
		}
		want := rawDoTwice(t, mapAddr, method, req, "GET /probe "+proto+"\r\nHost: x\r\n"+conn+"\r\n")
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: answer (-map +lines):\n%s", tc.name, d)
		}
	}
	if errs := el.all(); len(errs) > 0 {
		t.Errorf("OnError: %v", errs)
	}
}

type twoAnswers struct {
	First, Second rawResult
	SecondErr     string
}

// rawDoTwice sends req and then probe on one connection, reading both
// answers.
func rawDoTwice(t *testing.T, addr, method, req, probe string) twoAnswers {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	read := func(method string) (rawResult, error) {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		for err == nil && resp.StatusCode < 200 {
			resp, err = http.ReadResponse(br, &http.Request{Method: method})
		}
		if err != nil {
			return rawResult{}, err
		}
		body, err := io.ReadAll(resp.Body)
		res := rawResult{Status: resp.StatusCode, Header: resp.Header, Body: string(body), Trailer: resp.Trailer,
			Chunked: len(resp.TransferEncoding) > 0, Length: resp.ContentLength}
		if err != nil {
			res.Err = err.Error()
		}
		res.Header.Del("Date")
		return res, nil
	}
	var out twoAnswers
	io.WriteString(c, req)
	out.First, err = read(method)
	if err != nil {
		out.First.Err = err.Error()
		return out
	}
	if _, err := io.WriteString(c, probe); err != nil {
		out.SecondErr = "write: closed"
		return out
	}
	out.Second, err = read("GET")
	if err != nil {
		out.SecondErr = "closed"
	}
	return out
}

// TestLinesNotShared: many clients at once through one forwarder
// with a small pool, each upstream answer carrying its request's own
// fields: the lines buffer of a pooled upstream connection, reused by the
// next request as soon as the previous one is done with it, never shows
// in another client's answer (h1server copies the lines).
func TestLinesNotShared(t *testing.T) {
	up := newRawUpstream(t, func(r *http.Request) (string, bool) {
		id := strings.TrimPrefix(r.URL.Path, "/")
		pad := strings.Repeat(id, 1+len(id)%7)
		body := "body-" + id
		return "HTTP/1.1 200 OK\r\nX-Id: " + id + "\r\nX-Pad: " + pad + "\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body, false
	})
	el := newErrorLog()
	f := newForwarder(t, up.url, Options{MaxIdleConns: 2}, el)
	var taken atomic.Int64
	addr := h1Front(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.ServeHTTP(lineCounter{w, &taken}, r)
		// The handler returns at once: the server commits the buffered
		// answer afterwards, while the upstream connection serves others.
	}))
	const clients, each = 16, 40
	errs := make(chan string, clients*each)
	done := make(chan struct{})
	for c := 0; c < clients; c++ {
		go func(c int) {
			defer func() { done <- struct{}{} }()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(conn)
			for i := 0; i < each; i++ {
				id := strconv.Itoa(c*1000 + i)
				io.WriteString(conn, "GET /"+id+" HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				if got := resp.Header["X-Id"]; len(got) != 1 || got[0] != id || string(b) != "body-"+id ||
					resp.Header.Get("X-Pad") != strings.Repeat(id, 1+len(id)%7) {
					errs <- "request " + id + ": got X-Id " + strings.Join(got, ",") + " X-Pad " + resp.Header.Get("X-Pad") + " body " + string(b)
				}
			}
		}(c)
	}
	for c := 0; c < clients; c++ {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if taken.Load() != clients*each {
		t.Errorf("%d answers passed on as lines, want %d", taken.Load(), clients*each)
	}
}

// FuzzLinesVsMap: whatever an upstream sends (a status line and
// fields from the fuzzer, then a body), the client of h1server gets the
// same answer, and its connection the same fate, whether the forwarder
// hands the fields over as lines or through Header().
func FuzzLinesVsMap(f *testing.F) {
	for _, tc := range lineCases {
		f.Add(tc.method == "HEAD", tc.resp)
	}
	for _, tc := range moreLineCases {
		f.Add(tc.method == "HEAD", tc.resp)
	}
	var cur atomic.Value
	cur.Store("")
	up := newRawUpstream(f, func(r *http.Request) (string, bool) {
		if r.URL.Path == "/probe" {
			return "HTTP/1.1 200 OK\r\nX-Probe: 1\r\nContent-Length: 5\r\n\r\nprobe", true
		}
		return cur.Load().(string), true
	})
	el := newErrorLog()
	fw := newForwarder(f, up.url, Options{ResponseHeaderTimeout: 2 * time.Second}, el)
	linesAddr, mapAddr, taken := linesAndMapFronts(f, fw)
	f.Fuzz(func(t *testing.T, head bool, resp string) {
		cur.Store(resp)
		method := "GET"
		if head {
			method = "HEAD"
		}
		req := method + " /c HTTP/1.1\r\nHost: x\r\n\r\n"
		probe := "GET /probe HTTP/1.1\r\nHost: x\r\n\r\n"
		before := taken.Load()
		got := rawDoTwice(t, linesAddr, method, req, probe)
		if taken.Load() == before {
			return // the map path both times
		}
		want := rawDoTwice(t, mapAddr, method, req, probe)
		// The map path passes the upstream's Content-Length on as it was
		// written ("007"), the lines path as a number ("7"): the same.
		for _, a := range []*twoAnswers{&got, &want} {
			for _, h := range []http.Header{a.First.Header, a.Second.Header} {
				for i, v := range h["Content-Length"] {
					if n, err := strconv.ParseInt(v, 10, 64); err == nil {
						h["Content-Length"][i] = strconv.FormatInt(n, 10)
					}
				}
			}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("upstream %q: answer (-map +lines):\n%s", resp, d)
		}
	})
}
