package forward

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var readResponseTests = []struct {
	name   string
	in     string
	status int
	minor  int
	fields [][2]string
	err    error // matched with errors.Is
}{
	{
		name: "ordinary", in: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
		status: 200, minor: 1, fields: [][2]string{{"Content-Type", "application/json"}, {"Content-Length", "2"}},
	},
	{name: "no reason", in: "HTTP/1.1 204\r\n\r\n", status: 204, minor: 1},
	{name: "empty reason", in: "HTTP/1.0 404 \r\n\r\n", status: 404, minor: 0},
	{name: "bare LF", in: "HTTP/1.1 200 OK\nA: b\n\n", status: 200, minor: 1, fields: [][2]string{{"A", "b"}}},
	{
		name: "canonical names, trimmed values", in: "HTTP/1.1 200 OK\r\ncontent-TYPE:\t text/plain \t\r\nx-a-b:c\r\nEmpty:\r\n\r\n",
		status: 200, minor: 1, fields: [][2]string{{"Content-Type", "text/plain"}, {"X-A-B", "c"}, {"Empty", ""}},
	},
	{
		name: "obs-fold", in: "HTTP/1.1 200 OK\r\nA: one\r\n two\r\n\t three \r\nB: x\r\n\r\n",
		status: 200, minor: 1, fields: [][2]string{{"A", "one two three"}, {"B", "x"}},
	},
	{name: "obs-fold of an empty value", in: "HTTP/1.1 200 OK\r\nA:\r\n two\r\n\r\n", status: 200, minor: 1, fields: [][2]string{{"A", "two"}}},
	{name: "repeated", in: "HTTP/1.1 200 OK\r\nSet-Cookie: a\r\nset-cookie: b\r\n\r\n", status: 200, minor: 1, fields: [][2]string{{"Set-Cookie", "a"}, {"Set-Cookie", "b"}}},
	{name: "obs-text value", in: "HTTP/1.1 200 OK\r\nA: caf\xc3\xa9\r\n\r\n", status: 200, minor: 1, fields: [][2]string{{"A", "caf\xc3\xa9"}}},
	{name: "long line", in: "HTTP/1.1 200 OK\r\nA: " + strings.Repeat("v", 3*readBufferSize) + "\r\n\r\n", status: 200, minor: 1, fields: [][2]string{{"A", strings.Repeat("v", 3*readBufferSize)}}},
	{name: "nothing", in: "", err: io.EOF},
	{name: "cut in the status line", in: "HTTP/1.1 20", err: io.ErrUnexpectedEOF},
	{name: "cut in the fields", in: "HTTP/1.1 200 OK\r\nA: b\r\n", err: io.ErrUnexpectedEOF},
	{name: "HTTP/2", in: "HTTP/2.0 200 OK\r\n\r\n", err: errMalformed},
	{name: "lower-case protocol", in: "http/1.1 200 OK\r\n\r\n", err: errMalformed},
	{name: "four digits", in: "HTTP/1.1 2000 OK\r\n\r\n", err: errMalformed},
	{name: "two digits", in: "HTTP/1.1 20 OK\r\n\r\n", err: errMalformed},
	{name: "status below 100", in: "HTTP/1.1 099 OK\r\n\r\n", err: errMalformed},
	{name: "two spaces", in: "HTTP/1.1  200 OK\r\n\r\n", err: errMalformed},
	{name: "no colon", in: "HTTP/1.1 200 OK\r\nA b\r\n\r\n", err: errMalformed},
	{name: "empty name", in: "HTTP/1.1 200 OK\r\n: b\r\n\r\n", err: errMalformed},
	{name: "space in name", in: "HTTP/1.1 200 OK\r\nA b: c\r\n\r\n", err: errMalformed},
	{name: "space before colon", in: "HTTP/1.1 200 OK\r\nA : c\r\n\r\n", err: errMalformed},
	{name: "CR in value", in: "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", err: errMalformed},
	{name: "NUL in value", in: "HTTP/1.1 200 OK\r\nA: b\x00\r\n\r\n", err: errMalformed},
	{name: "fold first", in: "HTTP/1.1 200 OK\r\n A: b\r\n\r\n", err: errMalformed},
	{name: "too large", in: "HTTP/1.1 200 OK\r\n" + strings.Repeat("A: "+strings.Repeat("b", 1000)+"\r\n", 1100) + "\r\n", err: errHeaderTooLarge},
	{name: "too many fields", in: "HTTP/1.1 200 OK\r\n" + strings.Repeat("A:\r\n", MaxHeaderBytes/fieldOverhead) + "\r\n", err: errHeaderTooLarge},
	{name: "one huge line", in: "HTTP/1.1 200 OK\r\nA: " + strings.Repeat("b", MaxHeaderBytes) + "\r\n\r\n", err: errHeaderTooLarge},
}

func TestReadResponse(t *testing.T) {
	for _, tc := range readResponseTests {
		var h head
		err := h.readResponse(bufio.NewReaderSize(strings.NewReader(tc.in), readBufferSize))
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: readResponse = %v, want %v", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: readResponse = %v", tc.name, err)
			continue
		}
		var fields [][2]string
		for _, f := range h.fields {
			fields = append(fields, [2]string{string(h.name(f)), string(h.value(f))})
		}
		if d := cmp.Diff([]any{h.status, h.minor, fields}, []any{tc.status, tc.minor, tc.fields}); d != "" {
			t.Errorf("%s: status, minor, fields (-got +want):\n%s", tc.name, d)
		}
	}
}

func TestFraming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		in     string
		want   framing
		bad    bool
	}{
		{name: "length", in: "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", want: framing{length: 12, declared: 12}},
		{name: "same length twice", in: "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Length: 012\r\n\r\n", want: framing{length: 12, declared: 12}},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n", want: framing{length: -1, declared: -1, chunked: true, stream: true}},
		{name: "chunked and length", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", want: framing{length: -1, declared: -1, chunked: true, close: true, stream: true}},
		{name: "until close", in: "HTTP/1.1 200 OK\r\n\r\n", want: framing{length: -1, declared: -1, close: true, stream: true}},
		{name: "connection close", in: "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", want: framing{close: true}},
		{name: "connection lists a field", in: "HTTP/1.1 200 OK\r\nConnection: keep-alive, X-A\r\nContent-Length: 0\r\n\r\n", want: framing{connList: true}},
		{name: "http/1.0", in: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", want: framing{length: 1, declared: 1, close: true}},
		{name: "http/1.0 keep-alive", in: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n", want: framing{length: 1, declared: 1}},
		{name: "http/1.0 ignores chunked", in: "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", want: framing{length: -1, declared: -1, close: true, stream: true}},
		{name: "event stream", in: "HTTP/1.1 200 OK\r\nContent-Type: Text/Event-Stream ; charset=utf-8\r\nContent-Length: 5\r\n\r\n", want: framing{length: 5, declared: 5, stream: true}},
		{name: "head", method: "HEAD", in: "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", want: framing{declared: 12}},
		{name: "head without length", method: "HEAD", in: "HTTP/1.1 200 OK\r\n\r\n", want: framing{declared: -1}},
		{name: "204", in: "HTTP/1.1 204 No Content\r\n\r\n", want: framing{declared: -1}},
		{name: "304 with a length", in: "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", want: framing{declared: 9}},
		{name: "different lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", bad: true},
		{name: "length list", in: "HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\n", bad: true},
		{name: "negative length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", bad: true},
		{name: "huge length", in: "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", bad: true},
		{name: "gzip coding", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", bad: true},
		{name: "two codings", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", bad: true},
	} {
		var h head
		if err := h.readResponse(bufio.NewReader(strings.NewReader(tc.in))); err != nil {
			t.Fatalf("%s: readResponse = %v", tc.name, err)
		}
		got, err := h.framing(cmpOrString(tc.method, "GET"))
		if tc.bad {
			if !errors.Is(err, errMalformed) {
				t.Errorf("%s: framing = %+v, %v; want errMalformed", tc.name, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: framing = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestParseChunkLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		size int64
		ok   bool
	}{
		{"0\r\n", 0, true},
		{"1a\r\n", 26, true},
		{"FF;name=value\r\n", 255, true},
		{"10 \t;x\r\n", 16, true},
		{"7fffffffffffffff\r\n", 1<<63 - 1, true},
		{"8000000000000000\r\n", 0, false},
		{"10000000000000000\r\n", 0, false},
		{"\r\n", 0, false},
		{"1\n", 0, false},
		{"1\r\r\n", 0, false},
		{"-1\r\n", 0, false},
		{"0x1\r\n", 0, false},
		{" 1\r\n", 0, false},
		{"1" + strings.Repeat(" ", maxChunkLine) + "\r\n", 0, false},
	} {
		size, ok := parseChunkLine([]byte(tc.in))
		if size != tc.size || ok != tc.ok {
			t.Errorf("parseChunkLine(%q) = %d, %v; want %d, %v", tc.in, size, ok, tc.size, tc.ok)
		}
	}
}

// FuzzReadResponse feeds the head parser and framing anything: they must
// not panic, and what they accept must be what they promise.
func FuzzReadResponse(f *testing.F) {
	for _, tc := range readResponseTests {
		if len(tc.in) < 4096 {
			f.Add([]byte(tc.in))
		}
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\nConnection: close, x\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var h head
		br := bufio.NewReaderSize(bytes.NewReader(in), 16) // the smallest buffer: long-line paths
		if err := h.readResponse(br); err != nil {
			return
		}
		if h.status < 100 || h.status > 999 || h.minor < 0 || h.minor > 9 {
			t.Fatalf("status %d, minor %d", h.status, h.minor)
		}
		for _, f := range h.fields {
			name, value := h.name(f), h.value(f)
			if canon := bytes.Clone(name); !canonicalize(canon) || !bytes.Equal(canon, name) {
				t.Fatalf("field name %q", name)
			}
			if !validValue(value) || !bytes.Equal(trim(value), value) {
				t.Fatalf("field value %q", value)
			}
		}
		for _, m := range []string{"GET", "HEAD"} {
			fr, err := h.framing(m)
			if err != nil {
				continue
			}
			if fr.length < -1 || (fr.chunked && fr.length != -1) || (fr.length == -1 && !fr.chunked && !fr.close) {
				t.Fatalf("framing %+v", fr)
			}
		}
	})
}

func FuzzParseChunkLine(f *testing.F) {
	for _, s := range []string{"0\r\n", "1a;x=y\r\n", "7fffffffffffffff\r\n", "1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if size, ok := parseChunkLine(in); ok && size < 0 {
			t.Fatalf("parseChunkLine(%q) = %d", in, size)
		}
	})
}
