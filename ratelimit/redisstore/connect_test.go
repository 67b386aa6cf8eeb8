package redisstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/redistest"
	"github.com/floodgate/floodgate/ratelimit"
)

// TestURLs connects through URLs as operators write them: a password,
// a database number, TLS.
func TestURLs(t *testing.T) {
	t.Parallel()
	l := ratelimit.Limit{Count: 5, Window: time.Minute}

	t.Run("password and database", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, "--requirepass", "s3cr/t")
		o, err := ParseURL("redis://:s3cr%2Ft@" + srv.Addr() + "/3")
		if err != nil {
			t.Fatal(err)
		}
		s := newStore(t, o)
		take(t, s, "k", 2, l)
		replies, err := redistest.DoAll(srv.Addr(), []string{"AUTH", "s3cr/t"}, []string{"SELECT", "3"}, []string{"DBSIZE"})
		if err != nil || replies[2] != "1" {
			t.Errorf("DBSIZE of database 3 = %q, %v, want 1", replies, err)
		}
	})

	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t, "--requirepass", "right")
		s, err := New(Options{Addrs: []string{srv.Addr()}, Password: "wrong"})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		defer s.Close()
		wantError(t, s, "WRONGPASS")
	})

	t.Run("tls", func(t *testing.T) {
		t.Parallel()
		srv, tlsPort, pool := startTLS(t)
		if _, err := srv.Do("PING"); err != nil {
			t.Fatal(err)
		}
		o, err := ParseURL("rediss://127.0.0.1:" + strconv.Itoa(tlsPort))
		if err != nil {
			t.Fatal(err)
		}
		o.TLS.RootCAs = pool
		s := newStore(t, o)
		if d := take(t, s, "k", 2, l); !d.Allowed || d.Remaining != 3 {
			t.Errorf("Take over TLS = %+v, want allowed with Remaining 3", d)
		}

		// Without the CA, the server is not trusted: no connection.
		o.TLS = &tls.Config{}
		s2, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		wantError(t, s2, "certificate")
	})
}

// wantError waits until the first connection attempt of s has failed
// (it may take longer than Options.Timeout, which New waits at most, and
// a Take that ran out of its own timeout meanwhile says only that), and
// checks that Take then fails at once, with ErrUnavailable saying why.
func wantError(t *testing.T, s *Store, why string) {
	t.Helper()
	l := ratelimit.Limit{Count: 5, Window: time.Minute}
	var err error
	waitFor(t, "connection error", func() bool {
		_, err = s.Take(ctx, "k", 1, l)
		return err != nil && !strings.Contains(err.Error(), "not connected yet") && !strings.Contains(err.Error(), "deadline exceeded")
	})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), why) {
		t.Errorf("Take: error %v, want ErrUnavailable saying %q", err, why)
	}
}

// startTLS starts a Redis server that also listens with TLS on tlsPort,
// with a certificate for 127.0.0.1 signed by the CA in pool.
func startTLS(t *testing.T) (srv *redistest.Server, tlsPort int, pool *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	pool = writeCerts(t, dir)
	tlsPort = redistest.FreePort(t)
	srv = redistest.Start(t, "--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", filepath.Join(dir, "server.pem"), "--tls-key-file", filepath.Join(dir, "server.key"),
		"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "no")
	return srv, tlsPort, pool
}

// writeCerts writes a CA (ca.pem) and a server certificate for 127.0.0.1
// signed by it (server.pem, server.key) to dir, and returns a pool with
// the CA.
func writeCerts(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, srvKey := key(), key()
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "floodgate test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, der []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", "CERTIFICATE", caDER)
	write("server.pem", "CERTIFICATE", srvDER)
	write("server.key", "EC PRIVATE KEY", keyDER)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool
}

// TestSilentTLSPeer: a peer that accepts connections and never answers
// the TLS handshake holds neither the store's connecting goroutine nor
// Close for good (the dial timeout covers the handshake).
func TestSilentTLSPeer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	s, err := New(Options{Addrs: []string{ln.Addr().String()}, TLS: &tls.Config{}, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Take(ctx, "k", 1, ratelimit.Limit{Count: 5, Window: time.Minute}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Take with the handshake unanswered: %v, want ErrUnavailable", err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second): // a guard far above the 1 s dial timeout, not a measurement
		t.Fatal("Close still waiting for a TLS handshake the peer never answers")
	}
}
