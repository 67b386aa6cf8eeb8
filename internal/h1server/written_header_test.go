package h1server

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Differential cases for "the header sent is the header at WriteHeader"
// (appendHeaderFields, sentHeader): h1server renders the
// header at WriteHeader, but still reads the trailer declarations
// ("Trailer") from the handler's live map when it writes the trailers.
// net/http takes them from the header as it was at WriteHeader.
func trailerDeclarationCases() []cmpCase {
	return []cmpCase{
		{name: "trailer-undeclared-after-writeheader", in: get11 + get11, n: 2,
			// The header went out with "Trailer: X-Sum"; the handler then
			// drops the declaration from its map. net/http sends X-Sum
			// (declared at WriteHeader); h1server announces it and sends
			// an empty trailer section.
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Trailer", "X-Sum")
				w.WriteHeader(200)
				w.Header().Del("Trailer")
				io.WriteString(w, "body")
				w.Header().Set("X-Sum", "42")
			}},
		{name: "trailer-declared-after-writeheader-chunked", in: get11 + get11, n: 2,
			// Declared only after WriteHeader (the header sent has no
			// Trailer field): net/http sends no trailer; h1server sends
			// X-Sum, a field the header never announced.
			h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(200)
				w.Header().Set("Trailer", "X-Sum")
				writeN(w, 20<<10) // over bufferLimit: chunked
				w.Header().Set("X-Sum", "42")
			}},
	}
}

func TestTrailerDeclarationsAtWriteHeader(t *testing.T) {
	for _, tc := range trailerDeclarationCases() {
		t.Run(tc.name, tc.run)
	}
}

// TestSniffLargeFirstWrite: a handler that sets no Content-Type and
// whose first Write is larger than bufferLimit gets no Content-Type from
// h1server (commit sniffs only what it buffered: nothing), where net/http
// sniffs the first 512 bytes of that write; the same body written in
// pieces gets one from both. The forwarder writes an upstream body in
// reads of up to 32 KiB, so a large untyped upstream answer reaches the
// client without a Content-Type through h1server only.
func TestSniffLargeFirstWrite(t *testing.T) {
	big := "<html><body>" + strings.Repeat("x", 20<<10) + "</body></html>"
	cmpCase{name: "large-first-write-sniffed", in: get11 + get11, n: 2,
		h: func(w http.ResponseWriter, r *http.Request, _ func(string, ...any)) {
			io.WriteString(w, big)
		}}.run(t)
}
