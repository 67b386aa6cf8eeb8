package listen

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// pair returns both ends of a loopback TCP connection, the accepted one
// through WriteIdle(d).
func pair(t testing.TB, d time.Duration) (server, client net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wl := WriteIdle(ln, d)
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = wl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// TestWriteIdleFailsAWriteNobodyReads: writes to a peer that reads
// nothing fail once the socket buffers are full and d has passed, and a
// deadline the server sets itself wins until cleared.
func TestWriteIdleFailsAWriteNobodyReads(t *testing.T) {
	server, _ := pair(t, 50*time.Millisecond)
	buf := make([]byte, 64<<10)
	var err error
	for i := 0; i < 1<<16 && err == nil; i++ { // a bound: 4 GiB
		_, err = server.Write(buf)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write error %v, want a deadline exceeded", err)
	}

	server, client := pair(t, 50*time.Millisecond)
	server.SetWriteDeadline(time.Unix(1, 0)) // the server's own, in the past
	if _, err := server.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("write after the server's own past deadline: %v, want a deadline exceeded", err)
	}
	server.SetWriteDeadline(time.Time{})
	if _, err := server.Write([]byte("y")); err != nil {
		t.Errorf("write after clearing the deadline: %v", err)
	}
	got := make([]byte, 1)
	if _, err := io.ReadFull(client, got); err != nil || got[0] != 'y' {
		t.Errorf("client read %q, %v; want y", got, err)
	}
}

func TestWriteIdleZeroIsTheListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if WriteIdle(ln, 0) != ln {
		t.Errorf("WriteIdle(ln, 0) wraps ln")
	}
}

// BenchmarkWrite: the cost the wrapper adds to a small write (an
// answer's), against the bare connection.
func BenchmarkWrite(b *testing.B) {
	for _, bc := range []struct {
		name string
		d    time.Duration
	}{{"bare", 0}, {"write-idle", time.Minute}} {
		b.Run(bc.name, func(b *testing.B) {
			server, client := pair(b, bc.d)
			go io.Copy(io.Discard, client)
			p := make([]byte, 256)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := server.Write(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLimiterClosesConnectionsOverTheCap: with 3 connections open, a
// fourth is closed at once and counted; once one closes, a new one is
// served.
func TestLimiterClosesConnectionsOverTheCap(t *testing.T) {
	var rejected atomic.Int64
	lim := NewLimiter(3, func() { rejected.Add(1) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := lim.Wrap(ln)
	defer wl.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := wl.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		return c
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	var served []net.Conn
	for range 3 {
		dial()
		served = append(served, <-accepted)
	}
	over := dial()
	over.SetReadDeadline(time.Now().Add(20 * time.Second)) // a bound, not a measure
	if _, err := over.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the fourth connection: read %v, want it closed", err)
	}
	if rejected.Load() != 1 || lim.Open() != 3 {
		t.Errorf("rejected %d, open %d; want 1, 3", rejected.Load(), lim.Open())
	}
	served[0].Close()
	served[0].Close() // twice: its place is given back once
	dial()
	<-accepted
	if rejected.Load() != 1 || lim.Open() != 3 {
		t.Errorf("after one closed and one more: rejected %d, open %d; want 1, 3", rejected.Load(), lim.Open())
	}
}

// TestLimiterCountsWithoutCap: with no cap, connections are counted all
// the same (the memory release after a burst reads the count).
func TestLimiterCountsWithoutCap(t *testing.T) {
	lim := NewLimiter(0, func() { t.Error("a connection rejected with no cap") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := lim.Wrap(ln)
	defer wl.Close()
	var served []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := wl.Accept()
		if err != nil {
			t.Fatal(err)
		}
		served = append(served, s)
	}
	if lim.Open() != 5 {
		t.Errorf("open %d, want 5", lim.Open())
	}
	for _, s := range served[:3] {
		s.Close()
	}
	if lim.Open() != 2 {
		t.Errorf("after 3 closed: open %d, want 2", lim.Open())
	}
}
