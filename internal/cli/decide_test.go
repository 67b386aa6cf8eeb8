package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/testnet"
)

// TestServeDecideListener runs `floodgate serve` with the MaveDB example
// and FLOODGATE_DECIDE_LISTEN set: one process, both listeners, one
// store. A client's requests through the gateway and a proxy's questions
// about the same client's requests draw on the same counter.
func TestServeDecideListener(t *testing.T) {
	pub, adm, dec, up := testnet.FreeAddr(t), testnet.FreeAddr(t), testnet.FreeAddr(t), testnet.FreeAddr(t)
	vars := map[string]string{
		"FLOODGATE_LISTEN":          pub,
		"FLOODGATE_ADMIN_LISTEN":    adm,
		"FLOODGATE_DECIDE_LISTEN":   dec,
		"FLOODGATE_DECIDE_PROTOCOL": "forwarded",
		"FLOODGATE_TRUSTED_PROXIES": "127.0.0.1",
		"FLOODGATE_UPSTREAM":        "http://" + up,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stderr testnet.Buffer
	env := environ{lookup: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }, stdout: io.Discard, stderr: &stderr}
	done := make(chan int, 1)
	go func() {
		done <- run1(ctx, env, []string{"serve", "--config", "../../examples/mavedb.yaml", "--sample-upstream"})
	}()
	waitFor(t, "http://"+adm+"/healthz")

	get := func(url string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := get("http://"+pub+"/api/v1/score-sets", "X-Forwarded-For", "192.0.2.80"); resp.StatusCode != 200 ||
		!strings.HasPrefix(resp.Header.Get("RateLimit"), `"rate-limit-ip";r=1499;`) {
		t.Fatalf("through the gateway: %d RateLimit %q, want 200 with 1499 remaining", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	resp := get("http://"+dec+"/decide", "X-Forwarded-Method", "GET", "X-Forwarded-Uri", "/api/v1/score-sets",
		"X-Forwarded-For", "192.0.2.80")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"rate-limit-ip";r=1498;`) {
		t.Errorf("decision: %d RateLimit %q, want 200 with 1498 remaining (the gateway's request counted)", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	if !strings.Contains(stderr.String(), `"listener":"decide"`) {
		t.Errorf("no listening record for the decision listener:\n%s", stderr.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("serve exit code = %d, want 0; stderr:\n%s", code, stderr.String())
	}
}
