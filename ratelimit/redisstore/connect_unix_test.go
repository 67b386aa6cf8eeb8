//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redisstore

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"

	"github.com/floodgate/floodgate/internal/rawio"
)

// TestDialRawSockets checks that the store's connections, plain and TLS,
// read and write their sockets with raw system calls, and still talk to
// a real server.
func TestDialRawSockets(t *testing.T) {
	t.Parallel()
	srv, tlsPort, pool := startTLS(t)
	ping := func(t *testing.T, nc net.Conn) {
		t.Helper()
		if _, err := nc.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 7)
		if n, err := nc.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
			t.Errorf("PING answered %q, %v; want +PONG", buf[:n], err)
		}
	}

	nc, err := dial(ctx, srv.Addr(), &net.Dialer{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, ok := nc.(*rawio.Conn); !ok {
		t.Errorf("dial returned a %T, want a *rawio.Conn", nc)
	}
	ping(t, nc)

	tc, err := dial(ctx, "127.0.0.1:"+strconv.Itoa(tlsPort), &net.Dialer{}, &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	if c, ok := tc.(*tls.Conn); !ok {
		t.Errorf("dial over TLS returned a %T, want a *tls.Conn", tc)
	} else if _, ok := c.NetConn().(*rawio.Conn); !ok {
		t.Errorf("dial over TLS runs over a %T, want a *rawio.Conn", c.NetConn())
	}
	ping(t, tc)
}
