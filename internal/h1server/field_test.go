package h1server

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// fieldValueCases are values a handler (or an upstream, through the
// forwarder) may set: line breaks that would start a new field, spaces
// and tabs at the ends, and bytes net/http leaves alone.
var fieldValueCases = []string{
	"", "plain", " lead", "trail ", "\tboth\t ", "a\r\nInjected: 1", "a\nb", "a\rb", "\r\n", " \r\n x \r\n ",
	"a\r\n\r\nHTTP/1.1 200 OK", "caf\xe9", "\x00nul", "\vvtab\f", "\u00a0nbsp\u00a0", strings.Repeat("x", 5000),
}

// writeFieldValueOf returns what writeFieldValue writes for v.
func writeFieldValueOf(v string) string {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	writeFieldValue(bw, v)
	bw.Flush()
	return b.String()
}

// netHTTPFieldValue returns what net/http writes for the value v.
func netHTTPFieldValue(v string) string {
	var b bytes.Buffer
	http.Header{"X-A": {v}}.Write(&b)
	return strings.TrimSuffix(strings.TrimPrefix(b.String(), "X-A: "), "\r\n")
}

// TestFieldValueAsNetHTTP: a value is written exactly as net/http writes
// it (no line break survives: a value cannot add a field or end the head).
func TestFieldValueAsNetHTTP(t *testing.T) {
	for _, v := range fieldValueCases {
		got, want := writeFieldValueOf(v), netHTTPFieldValue(v)
		if got != want {
			t.Errorf("value %q: written %q, net/http writes %q", v, got, want)
		}
		if strings.ContainsAny(got, "\r\n") {
			t.Errorf("value %q: a line break was written", v)
		}
	}
}

func FuzzFieldValue(f *testing.F) {
	for _, v := range fieldValueCases {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := writeFieldValueOf(v), netHTTPFieldValue(v); got != want {
			t.Fatalf("value %q: written %q, net/http writes %q", v, got, want)
		}
	})
}

func BenchmarkWriteFieldValue(b *testing.B) {
	bw := bufio.NewWriterSize(&bytes.Buffer{}, 1<<20)
	vals := []string{"application/json", "Mon, 30 Nov 2026 14:00:00 GMT", "73", "keep-alive", "nginx/1.22.1"}
	b.ReportAllocs()
	for b.Loop() {
		for _, v := range vals {
			writeFieldValue(bw, v)
		}
		bw.Reset(&bytes.Buffer{})
	}
}
