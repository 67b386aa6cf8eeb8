package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/testnet"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	return selfSignedAs(t, dir, "floodgate test")
}

// selfSignedAs is selfSigned with the certificate's common name.
func selfSignedAs(t *testing.T, dir, name string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestServeTLSAndHTTP2(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	pub, adm, up := testnet.FreeAddr(t), testnet.FreeAddr(t), testnet.FreeAddr(t)
	conf := filepath.Join(dir, "tls.yaml")
	os.WriteFile(conf, []byte(`
listen: `+pub+`
admin: {listen: "`+adm+`"}
tls: {cert_file: "`+certFile+`", key_file: "`+keyFile+`"}
upstreams: {api: {url: "http://`+up+`"}}
rules:
  - {name: per-ip, limits: [100/1m]}
`), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testnet.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run1(ctx, environ{lookup: func(string) (string, bool) { return "", false }, stdout: io.Discard, stderr: &stderr},
			[]string{"serve", "--config", conf, "--sample-upstream"})
	}()
	waitFor(t, "http://"+adm+"/healthz")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := client.Get("https://" + pub + "/v1/x")
	if err != nil {
		t.Fatalf("GET over TLS: %v\n%s", err, stderr.String())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Proto != "HTTP/2.0" {
		t.Errorf("got %d over %s, want 200 over HTTP/2.0", resp.StatusCode, resp.Proto)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, stderr.String())
	}
}

func TestServeTLSBadFiles(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "tls.yaml")
	os.WriteFile(conf, []byte(`
listen: `+testnet.FreeAddr(t)+`
admin: {listen: "off"}
tls: {cert_file: "`+dir+`/missing.pem", key_file: "`+dir+`/missing-key.pem"}
upstreams: {api: {url: "http://127.0.0.1:1"}}
`), 0o600)
	code, _, stderr := run(t, nil, "serve", "--config", conf)
	if code != 1 || stderr == "" {
		t.Errorf("code %d stderr %q: want a clear failure", code, stderr)
	}
}

// TestServeTLSCertificateReloadedOnSIGHUP: a certificate renewed at the
// same paths is served after SIGHUP, without a restart; files that do not
// load leave the current one served, and the log says why.
func TestServeTLSCertificateReloadedOnSIGHUP(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, _ := selfSignedAs(t, dir, "first")
	g := startServe(t, `
listen: ${PUB}
admin: {listen: "${ADM}"}
tls: {cert_file: "`+certFile+`", key_file: "`+keyFile+`"}
upstreams: {api: {url: "http://127.0.0.1:9"}}
`, "--no-watch")
	served := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", g.pub, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	// expiryFollows checks the expiry metric against the certificate in
	// certFile, which the listener serves by then.
	expiryFollows := func() {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(pair.Leaf.NotAfter.Unix())
		if got := g.metric("floodgate_tls_certificate_expiry_timestamp_seconds"); got != want {
			t.Errorf("floodgate_tls_certificate_expiry_timestamp_seconds = %v, want %v, the served certificate's", got, want)
		}
	}
	// waitServed sends SIGHUP until the listener serves want: reloads are
	// asynchronous, and other tests' gateways take the signal too.
	waitServed := func(want string) {
		t.Helper()
		for range 250 {
			if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			if served() == want {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("the listener still serves %q, want %q; log:\n%s", served(), want, g.stderr.String())
	}
	if got := served(); got != "first" {
		t.Fatalf("served %q at start, want first", got)
	}
	expiryFollows()
	time.Sleep(time.Second) // a renewed certificate that expires a second later, not a measure
	selfSignedAs(t, dir, "renewed")
	waitServed("renewed")
	expiryFollows()
	if !strings.Contains(g.stderr.String(), `"msg":"TLS certificate reloaded","reason":"SIGHUP"`) {
		t.Errorf("the new certificate is not in the log:\n%s", g.stderr.String())
	}

	// A key that does not match the certificate: the renewed one stays.
	other, _, _ := selfSignedAs(t, t.TempDir(), "other")
	data, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 250 {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(g.stderr.String(), `"msg":"TLS certificate kept: the files do not load"`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(g.stderr.String(), `"msg":"TLS certificate kept: the files do not load"`) {
		t.Fatalf("a pair that does not load is not in the log:\n%s", g.stderr.String())
	}
	if got := served(); got != "renewed" {
		t.Errorf("served %q after a pair that does not load, want renewed", got)
	}
}
