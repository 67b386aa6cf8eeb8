// Package testnet holds what the tests of several packages need to run
// real servers on loopback: a free address, and a buffer a server's log
// can be written to while the test reads it. For tests only.
package testnet

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address that was free a moment ago (another
// test may take it first: callers that bind it retry on "address already
// in use").
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Buffer is a bytes.Buffer safe for concurrent Write and String.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
