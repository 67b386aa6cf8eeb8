package h1server

// readPlainRequest, the fast path for plain heads, against
// http.ReadRequest: the head arriving in several reads, pipelined requests
// with the fast path and http.ReadRequest taking turns on one connection,
// aliasing between the value slices of one request, and heads that try to
// fool the CR LF CR LF search.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// hrSplitReader hands out its data in the pieces given.
type hrSplitReader struct{ pieces [][]byte }

func (r *hrSplitReader) Read(p []byte) (int, error) {
	for len(r.pieces) > 0 && len(r.pieces[0]) == 0 {
		r.pieces = r.pieces[1:]
	}
	if len(r.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.pieces[0])
	r.pieces[0] = r.pieces[0][n:]
	return n, nil
}

// hrReadAsServeOne reads one request as serveOne does: whatever the first
// read brought, then readPlainRequest, then http.ReadRequest if it refused.
func hrReadAsServeOne(br *bufio.Reader) (*http.Request, bool, error) {
	if _, err := br.Peek(1); err != nil {
		return nil, false, err
	}
	var plain http.Request
	if readPlainRequest(br, &plain) {
		return &plain, true, nil
	}
	req, err := http.ReadRequest(br)
	return req, false, err
}

func hrSameRequest(t *testing.T, what string, got, want *http.Request) {
	t.Helper()
	g, w := *got, *want
	g.Body, w.Body = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("%s: got %#v\nwant %#v", what, g, w)
	}
}

// TestPlainHeadSplitAcrossReads: for every split of the input into
// two reads (and one byte a read), the requests read as serveOne reads
// them, one after the other, are http.ReadRequest's, and so are the bytes
// each leaves.
func TestPlainHeadSplitAcrossReads(t *testing.T) {
	inputs := []string{
		"GET /a?b=c HTTP/1.1\r\nHost: h\r\nX: 1\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\nPragma: no-cache\r\n\r\nGET /c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\r\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: a\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\n\r\nPOST / HTTP/1.1\r\nHost: h\r\nContent-Length: 20\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nX: \"\r\n\r\n\"\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n c\r\n\r\n",
		"GET / HTTP/1.1\r\n1: x\r\n!: y\r\nHost: h\r\n\r\n",
	}
	type step struct {
		req   *http.Request
		plain bool
		err   bool
	}
	readAll := func(r io.Reader) ([]step, []byte) {
		br := bufio.NewReaderSize(r, 4<<10)
		var steps []step
		for {
			req, plain, err := hrReadAsServeOne(br)
			if err != nil {
				steps = append(steps, step{err: true})
				break
			}
			steps = append(steps, step{req: req, plain: plain})
			if req.Body != http.NoBody {
				break // a body: the rest is not a head
			}
		}
		rest, _ := io.ReadAll(br)
		return steps, rest
	}
	for _, in := range inputs {
		ref, refRest := readAll(&hrSplitReader{pieces: [][]byte{[]byte(in)}})
		check := func(desc string, pieces [][]byte) {
			got, rest := readAll(&hrSplitReader{pieces: pieces})
			if len(got) != len(ref) || !bytes.Equal(rest, refRest) {
				t.Fatalf("%q %s: %d requests, %q left; all at once: %d, %q", in, desc, len(got), rest, len(ref), refRest)
			}
			for i := range got {
				if got[i].err != ref[i].err {
					t.Fatalf("%q %s: request %d error %v, all at once %v", in, desc, i, got[i].err, ref[i].err)
				}
				if !got[i].err {
					hrSameRequest(t, fmt.Sprintf("%q %s request %d", in, desc, i), got[i].req, ref[i].req)
				}
			}
		}
		for k := 0; k <= len(in); k++ {
			check(fmt.Sprintf("split at %d", k), [][]byte{[]byte(in[:k]), []byte(in[k:])})
		}
		var bytewise [][]byte
		for i := range len(in) {
			bytewise = append(bytewise, []byte{in[i]})
		}
		check("one byte a read", bytewise)
	}
}

// TestPlainValuesDoNotAlias: the values of a request share one
// backing array; appending to one field's values must not write over
// another's (each gets cap 1, as textproto does).
func TestPlainValuesDoNotAlias(t *testing.T) {
	head := "GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nA: 3\r\nC: 4\r\nD: 5\r\n\r\n"
	br := bufio.NewReaderSize(strings.NewReader(head), 4<<10)
	br.Peek(1)
	var req http.Request
	if !readPlainRequest(br, &req) {
		t.Fatal("not read as plain")
	}
	for _, k := range []string{"A", "B", "C", "D"} {
		req.Header[k] = append(req.Header[k], "clobber")
	}
	want := http.Header{
		"A": {"1", "3", "clobber"},
		"B": {"2", "clobber"},
		"C": {"4", "clobber"},
		"D": {"5", "clobber"},
	}
	if !reflect.DeepEqual(req.Header, want) {
		t.Fatalf("after appends: %v, want %v", req.Header, want)
	}
}

// TestPlainNothingCarriesOver: on one keep-alive connection, plain
// heads and heads left to http.ReadRequest take turns; a handler that
// changes its request's header, and keeps it, changes nothing the next
// request sees.
func TestPlainNothingCarriesOver(t *testing.T) {
	var kept []*http.Request
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		var keys []string
		for k, vv := range r.Header {
			keys = append(keys, k+"="+strings.Join(vv, ","))
		}
		sort.Strings(keys)
		fmt.Fprintf(w, "%s %s host=%s close=%v %s", r.Method, r.RequestURI, r.Host, r.Close, strings.Join(keys, " "))
		// Mess with what the handler was given.
		r.Header["X-A"] = append(r.Header["X-A"], "leak")
		r.Header.Set("X-Injected", "1")
		r.Host = "evil"
		r.URL.Path = "/evil"
		kept = append(kept, r)
	})}
	c, br := dialT(t, startServer(t, s))
	reqs := []struct{ in, want string }{
		{"GET /1 HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n\r\n", "GET /1 host=a close=false X-A=1"},
		{"GET /2 HTTP/1.1\r\nHost: b\r\nPragma: no-cache\r\n\r\n", "GET /2 host=b close=false Cache-Control=no-cache Pragma=no-cache"},
		{"GET /3 HTTP/1.1\r\nHost: c\r\n\r\n", "GET /3 host=c close=false "},
		{"POST /4 HTTP/1.1\r\nHost: d\r\nContent-Length: 2\r\nX-A: 4\r\n\r\nhi", "POST /4 host=d close=false Content-Length=2 X-A=4"},
		{"GET /5 HTTP/1.0\r\nConnection: keep-alive\r\nHost: e\r\n\r\n", "GET /5 host=e close=false Connection=keep-alive"},
		{"GET /6 HTTP/1.1\r\nHost: f\r\nConnection: close\r\n\r\n", "GET /6 host=f close=true Connection=close"},
	}
	var all strings.Builder
	for _, r := range reqs {
		all.WriteString(r.in)
	}
	// Pipelined: later heads wait whole in the buffer while earlier
	// requests are served.
	io.WriteString(c, all.String())
	for i, r := range reqs {
		code, body := answerOf(t, br)
		if code != 200 || strings.TrimSpace(body) != strings.TrimSpace(r.want) {
			t.Fatalf("request %d: %d %q, want 200 %q", i+1, code, body, r.want)
		}
	}
}
