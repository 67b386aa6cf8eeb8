package cli

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"sync/atomic"
	"time"
)

// certificate is the public listener's TLS certificate: read from
// tls.cert_file and tls.key_file at start-up and again on every reload,
// so that a renewed certificate is served without a restart. Safe for
// concurrent use.
type certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// loadCertificate reads the pair, or says why it cannot.
func loadCertificate(certFile, keyFile string) (*certificate, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c.cur.Store(&pair)
	return c, nil
}

// expiry is when the certificate served now expires, in Unix seconds
// (0 if it has no parsed leaf).
func (c *certificate) expiry() float64 {
	if p := c.cur.Load(); p != nil && p.Leaf != nil {
		return float64(p.Leaf.NotAfter.Unix())
	}
	return 0
}

// get is the listener's tls.Config.GetCertificate.
func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// reload reads the pair again and serves it from the next handshake on if
// it differs; a pair that does not load leaves the current one served,
// and the log says why.
func (c *certificate) reload(logger *slog.Logger, reason string) {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		logger.Error("TLS certificate kept: the files do not load", "reason", reason,
			"cert_file", c.certFile, "key_file", c.keyFile, "error", err.Error())
		return
	}
	if old := c.cur.Load(); len(old.Certificate) > 0 && len(pair.Certificate) > 0 &&
		bytes.Equal(old.Certificate[0], pair.Certificate[0]) {
		return
	}
	c.cur.Store(&pair)
	attrs := []any{"reason", reason, "cert_file", c.certFile}
	if pair.Leaf != nil {
		attrs = append(attrs, "not_after", pair.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	logger.Info("TLS certificate reloaded", attrs...)
}
