// Package testnet holds what the tests of several packages need to run
// real servers on loopback: a free address, a raw server's accept loop,
// and a buffer a server's log can be written to while the test reads it.
// For tests only.
package testnet

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// FreeAddr returns a loopback address that was free a moment ago (another
// process may take it first: callers that bind it retry on "address
// already in use"). It never returns an address it returned before in
// this process: the kernel may hand the port it just freed to the next
// bind, and two listeners of one test (a gateway's public and admin) must
// not be given the same address.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		given.Lock()
		_, dup := given.addrs[addr]
		if !dup {
			given.addrs[addr] = struct{}{}
		}
		given.Unlock()
		if !dup {
			return addr
		}
	}
	t.Fatal("testnet: no loopback port not handed out before in 100 tries")
	return ""
}

// given holds the addresses FreeAddr returned.
var given = struct {
	sync.Mutex
	addrs map[string]struct{}
}{addrs: map[string]struct{}{}}

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

// Serve listens on a loopback port and runs handle on each connection
// accepted, in its own goroutine, until the test ends; then it closes the
// listener and every connection and waits for the handlers. It returns
// the address ("127.0.0.1:port").
func Serve(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}
