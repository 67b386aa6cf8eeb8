package h1server

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// answerLines answers one request on a connection that writes to a
// buffer: handler gets the response writer, and the client's reading of
// the bytes is returned, with whether WriteHeaderLines took the lines.
func answerLines(t testing.TB, method string, handler func(w *response) bool) (*http.Response, string, bool) {
	t.Helper()
	var out bytes.Buffer
	c := &conn{srv: &Server{}, bw: bufio.NewWriterSize(&out, 4<<10)}
	c.w.conn = c
	c.w.header = make(http.Header)
	w := &c.w
	w.reset(httptest.NewRequest(method, "/", nil))
	ok := handler(w)
	w.finish()
	w.release()
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(out.Bytes())), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("the answer does not parse: %v\n%q", err, out.String())
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the answer's body: %v\n%q", err, out.String())
	}
	return resp, string(body), ok
}

func TestWriteHeaderLines(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		code   int
		lines  string
		length int64
		body   string
		want   string // the fields the client sees (but Date), sorted, or "refused"
	}{
		{name: "fields and length", code: 200, lines: "X-A: 1\r\nContent-Type: text/plain\r\n", length: 5, body: "hello",
			want: "Content-Length: 5|Content-Type: text/plain|X-A: 1"},
		{name: "repeated, empty, obs-text, tab", code: 200, lines: "X-A: 1\r\nX-A: 2\r\nX-E: \r\nX-T: caf\xc3\xa9\tx\r\nContent-Type: a/b\r\n", length: 0,
			want: "Content-Length: 0|Content-Type: a/b|X-A: 1|X-A: 2|X-E: |X-T: caf\xc3\xa9\tx"},
		{name: "sniffed type", code: 200, lines: "X-A: 1\r\n", length: 15, body: "<html>hi</html>",
			want: "Content-Length: 15|Content-Type: text/html; charset=utf-8|X-A: 1"},
		{name: "encoded: no sniffing", code: 200, lines: "Content-Encoding: gzip\r\n", length: 3, body: "\x1f\x8b\x08",
			want: "Content-Encoding: gzip|Content-Length: 3"},
		{name: "no length: counted", code: 404, lines: "Content-Type: text/plain\r\n", length: -1, body: "nope",
			want: "Content-Length: 4|Content-Type: text/plain"},
		{name: "no lines", code: 200, length: 2, body: "ok", want: "Content-Length: 2|Content-Type: text/plain; charset=utf-8"},
		{name: "head keeps the length", method: "HEAD", code: 200, lines: "Content-Type: text/plain\r\n", length: 12,
			want: "Content-Length: 12|Content-Type: text/plain"},
		{name: "status 204", code: 204, lines: "X-A: 1\r\n", length: -1, want: "refused"},
		{name: "status 304", code: 304, lines: "X-A: 1\r\n", length: -1, want: "refused"},
		{name: "status 101", code: 101, lines: "X-A: 1\r\n", length: -1, want: "refused"},
		{name: "status 103", code: 103, lines: "X-A: 1\r\n", length: -1, want: "refused"},
		{name: "no colon", code: 200, lines: "X-A 1\r\n", length: 0, want: "refused"},
		{name: "no space", code: 200, lines: "X-A:1\r\n", length: 0, want: "refused"},
		{name: "bare LF", code: 200, lines: "X-A: 1\n", length: 0, want: "refused"},
		{name: "bare CR", code: 200, lines: "X-A: 1\rX-B: 2\r\n", length: 0, want: "refused"},
		{name: "unterminated", code: 200, lines: "X-A: 1\r\nX-B: 2", length: 0, want: "refused"},
		{name: "CR at the end", code: 200, lines: "X-A: 1\r", length: 0, want: "refused"},
		{name: "space in name", code: 200, lines: "X A: 1\r\n", length: 0, want: "refused"},
		{name: "empty name", code: 200, lines: ": 1\r\n", length: 0, want: "refused"},
		{name: "colon in value is fine", code: 200, lines: "X-A: a:b\r\n", length: 0, want: "Content-Length: 0|X-A: a:b"},
		{name: "NUL in value", code: 200, lines: "X-A: a\x00b\r\n", length: 0, want: "refused"},
		{name: "DEL in value", code: 200, lines: "X-A: a\x7fb\r\n", length: 0, want: "refused"},
		{name: "LF injection", code: 200, lines: "X-A: a\nSet-Cookie: s=1\r\n", length: 0, want: "refused"},
		{name: "Content-Length line", code: 200, lines: "Content-Length: 5\r\n", length: 5, body: "hello", want: "refused"},
		{name: "Transfer-Encoding line", code: 200, lines: "transfer-encoding: chunked\r\n", length: -1, want: "refused"},
		{name: "Connection line", code: 200, lines: "Connection: close\r\n", length: 0, want: "refused"},
		{name: "Trailer line", code: 200, lines: "Trailer: X-Sum\r\n", length: -1, want: "refused"},
		{name: "Keep-Alive line", code: 200, lines: "Keep-Alive: timeout=5\r\n", length: 0, want: "refused"},
		{name: "Upgrade line", code: 200, lines: "UPGRADE: h2c\r\n", length: 0, want: "refused"},
	} {
		method := tc.method
		if method == "" {
			method = "GET"
		}
		resp, body, ok := answerLines(t, method, func(w *response) bool {
			ok := w.WriteHeaderLines(tc.code, []byte(tc.lines), tc.length)
			if !ok {
				w.WriteHeader(tc.code)
			}
			io.WriteString(w, tc.body)
			return ok
		})
		if !ok {
			if tc.want != "refused" {
				t.Errorf("%s: refused", tc.name)
			}
			for name := range resp.Header {
				if name != "Date" && name != "Content-Length" && name != "Content-Type" {
					t.Errorf("%s: refused, yet the answer has %s", tc.name, name)
				}
			}
			continue
		}
		if tc.want == "refused" {
			t.Errorf("%s: taken", tc.name)
			continue
		}
		if resp.StatusCode != tc.code || body != tc.body {
			t.Errorf("%s: status %d, body %q; want %d, %q", tc.name, resp.StatusCode, body, tc.code, tc.body)
		}
		if got := fieldList(resp.Header); got != tc.want {
			t.Errorf("%s: fields\n%s\nwant\n%s", tc.name, got, tc.want)
		}
		if len(resp.Header["Date"]) != 1 {
			t.Errorf("%s: Date %q, want one", tc.name, resp.Header["Date"])
		}
	}
}

// TestWriteHeaderLinesDate: the handler's Date, in the lines, is the one
// sent; the server adds none.
func TestWriteHeaderLinesDate(t *testing.T) {
	resp, _, ok := answerLines(t, "GET", func(w *response) bool {
		return w.WriteHeaderLines(200, []byte("date: Mon, 30 Nov 2026 17:20:00 GMT\r\n"), 0)
	})
	if got := resp.Header["Date"]; !ok || len(got) != 1 || got[0] != "Mon, 30 Nov 2026 17:20:00 GMT" {
		t.Errorf("taken %v, Date %q", ok, got)
	}
}

// TestWriteHeaderLinesAfterHeader: the lines come after Header()'s
// fields; a header already written, or a Content-Length in Header(),
// refuses them.
func TestWriteHeaderLinesAfterHeader(t *testing.T) {
	resp, _, ok := answerLines(t, "GET", func(w *response) bool {
		w.Header().Set("Ratelimit", `"ip";r=9;t=60`)
		w.Header().Set("X-A", "map")
		return w.WriteHeaderLines(200, []byte("X-A: line\r\n"), 0)
	})
	if got := fieldList(resp.Header); !ok || got != `Content-Length: 0|Ratelimit: "ip";r=9;t=60|X-A: map|X-A: line` {
		t.Errorf("taken %v, fields %s", ok, got)
	}
	_, _, ok = answerLines(t, "GET", func(w *response) bool {
		w.WriteHeader(200)
		return w.WriteHeaderLines(200, []byte("X-A: line\r\n"), 0)
	})
	if ok {
		t.Error("taken after WriteHeader")
	}
	resp, body, ok := answerLines(t, "GET", func(w *response) bool {
		w.Header().Set("Content-Length", "2")
		ok := w.WriteHeaderLines(200, []byte("X-A: line\r\n"), 5)
		io.WriteString(w, "ok")
		return ok
	})
	if ok || body != "ok" || resp.Header.Get("X-A") != "" {
		t.Errorf("with a Content-Length in Header(): taken %v, body %q, X-A %q", ok, body, resp.Header.Get("X-A"))
	}
}

// FuzzWriteHeaderLines: whatever the lines, the answer parses, and its
// fields are exactly the lines' (when taken) plus those the server adds:
// no line can add a field, or end the header early.
func FuzzWriteHeaderLines(f *testing.F) {
	for _, s := range []string{"X-A: 1\r\n", "X-A: 1\r\nX-B: 2\r\n", "X-A: 1\n\r\n", "X-A: a\r\n\r\nHTTP/1.1 200 OK\r\n",
		"Content-Type: text/plain\r\nDate: x\r\n", "X-A: \xff\r\n", ": \r\n", "X-A: 1\r\nContent-Length: 3\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, lines []byte) {
		resp, body, ok := answerLines(t, "GET", func(w *response) bool {
			ok := w.WriteHeaderLines(200, lines, 4)
			if !ok {
				w.WriteHeader(200)
			}
			io.WriteString(w, "body")
			return ok
		})
		if body != "body" {
			t.Fatalf("body %q", body)
		}
		n := 0
		for name, vv := range resp.Header {
			switch name {
			case "Date", "Content-Length", "Content-Type":
				continue
			}
			n += len(vv)
		}
		if !ok {
			if n != 0 {
				t.Fatalf("refused, yet the answer has fields %v", resp.Header)
			}
			return
		}
		if want := bytes.Count(lines, []byte("\r\n")); n > want {
			t.Fatalf("%d lines gave %d fields: %v", want, n, resp.Header)
		}
		if got := resp.Header["Content-Length"]; len(got) != 1 || got[0] != "4" {
			t.Fatalf("Content-Length %q", got)
		}
	})
}

// fieldList writes h's fields but Date as "Name: value|...", sorted by
// name, values in order.
func fieldList(h http.Header) string {
	var out []string
	for name, vv := range h {
		if name == "Date" {
			continue
		}
		for _, v := range vv {
			out = append(out, name+": "+v)
		}
	}
	// By name only: one name's values keep their order.
	name := func(x string) string { n, _, _ := strings.Cut(x, ":"); return n }
	slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(name(a), name(b)) })
	return strings.Join(out, "|")
}
