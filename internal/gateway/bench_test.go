package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
