package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// TestInternalListenerOnUnixSocket: `serve --internal-listen unix:PATH`
// serves the same routes on a Unix socket (a stale socket file left by an
// earlier run is replaced), and requests there are not limited while the
// public listener's are.
func TestInternalListenerOnUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "internal.sock")
	// A stale socket, as a crashed earlier run would leave.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the stale socket is not there: %v", err)
	}

	up := okUpstream(t)
	g := startServe(t, fmt.Sprintf(`
listen: ${PUB}
admin: {listen: "${ADM}"}
upstreams: {api: {url: %q}}
rules:
  - {name: per-ip, limits: [3/1m]}
`, up), "--internal-listen", "unix:"+sock)

	public := map[int]int{}
	for range 10 {
		code, _ := g.get("/x", "")
		public[code]++
	}
	if public[200] != 3 || public[429] != 7 {
		t.Errorf("public listener: %v, want 3×200 and 7×429", public)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
	}}
	internal := map[int]int{}
	for range 10 {
		resp, err := client.Get("http://internal/x")
		if err != nil {
			t.Fatalf("internal listener: %v\n%s", err, g.stderr.String())
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		internal[resp.StatusCode]++
	}
	if internal[200] != 10 {
		t.Errorf("internal listener: %v, want 10×200 (not counted)", internal)
	}
}
