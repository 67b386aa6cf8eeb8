package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
)

// BenchmarkServeMaveDB measures the whole request path through the MaveDB
// rule set to a real loopback upstream (limits raised so nothing is
// limited): route, client IP, four rules, forwarding.
func BenchmarkServeMaveDB(b *testing.B) {
	t := &testing.T{}
	h := newHarness(t, mavedb, behindLB, nil)
	_ = h
	g := h.gw.Config.Handler
	req := httptest.NewRequest("GET", listPath, nil)
	req.RemoteAddr = "127.0.0.1:5555"
	req.Header.Set("User-Agent", "Mozilla/5.0")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req.Header["X-Forwarded-For"] = []string{ips[i%len(ips)]}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK && rec.Code != http.StatusTooManyRequests {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

var ips = func() []string {
	out := make([]string, 4096)
	for i := range out {
		out[i] = "198.51." + itoa(i/256) + "." + itoa(i%256)
	}
	return out
}()

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

// BenchmarkDecide measures one decision of the decision listener with the
// MaveDB rule set, as nginx asks it (clients spread over 4,096 addresses,
// so nothing is refused): in process, and through one loopback round trip
// on a kept-alive connection, the cost a proxy in front adds per request.
func BenchmarkDecide(b *testing.B) {
	h := newDecideHarness(b, config.DecideNginx, nil)
	hdr := http.Header{
		"X-Original-Method": {"GET"}, "X-Original-Uri": {listPath},
		"User-Agent": {"Mozilla/5.0"}, "X-Forwarded-Proto": {"https"},
	}
	b.Run("in-process", func(b *testing.B) {
		handler := h.srv.Decide()
		req := httptest.NewRequest("GET", "/decide", nil)
		req.RemoteAddr = proxyAddr + ":5555"
		req.Header = hdr.Clone()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			req.Header["X-Forwarded-For"] = []string{ips[i%len(ips)]}
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("status %d", rec.Code)
			}
		}
	})
	b.Run("loopback", func(b *testing.B) {
		req, _ := http.NewRequest("GET", h.dec.URL+"/decide", nil)
		req.Header = hdr.Clone()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			req.Header["X-Forwarded-For"] = []string{ips[i%len(ips)]}
			resp, err := h.proxy.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}
