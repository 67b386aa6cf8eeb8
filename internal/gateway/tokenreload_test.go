package gateway_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/admin"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

// TestTokenFetchesCountedUnderRenamedUpstream: a reload that renames an
// upstream, its credentials unchanged, counts the fetches of its token
// under the name it now has, which the alerts and the dashboard read;
// not under the name it had when its token source was made.
func TestTokenFetchesCountedUnderRenamedUpstream(t *testing.T) {
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"invalid_client"}`)
	}))
	defer endpoint.Close()
	conf := func(name string) (*config.File, []byte) {
		t.Helper()
		yaml := `
store: {url: memory}
upstreams:
  ` + name + `:
    url: "http://127.0.0.1:9"
    auth: {type: client_credentials, token_url: "` + endpoint.URL + `/token/", client_id: gw, client_secret: "a-client-secret-0123456789"}
routes: [{name: api, path: /, upstream: ` + name + `}]
`
		f, err := config.Parse("t.yaml", []byte(yaml), "", func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		f.Config.ApplyDefaults()
		return f, []byte(yaml)
	}
	c := newClock()
	m := telemetry.NewMetrics("test")
	f, data := conf("api")
	srv, problems := gateway.NewServer(f, data, gateway.Options{
		Store: gateway.NewMemoryStore(0, c.Now, m), Metrics: m, Logger: slog.New(slog.DiscardHandler), Now: c.Now,
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	adm := admin.Handler(admin.Options{Gatherer: m.Registry})
	get := func() {
		t.Helper()
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("GET", "/x", nil))
		if w.Code != http.StatusServiceUnavailable {
			t.Fatalf("GET /x with the token refused: %d, want 503", w.Code)
		}
	}
	const failed = `floodgate_upstream_token_fetches_total{result="failure",upstream="%s"}`
	get()
	if n := scrape(adm, strings.Replace(failed, "%s", "api", 1)); n != 1 {
		t.Fatalf("failed fetches under api = %v, want 1", n)
	}
	f, data = conf("openverse")
	if _, problems := srv.Reload(f, data); len(problems) > 0 {
		t.Fatal(problems)
	}
	c.Add(time.Minute) // past the backoff
	get()
	if api, ov := scrape(adm, strings.Replace(failed, "%s", "api", 1)), scrape(adm, strings.Replace(failed, "%s", "openverse", 1)); api != 1 || ov != 1 {
		t.Errorf("after the rename, failed fetches: api %v, openverse %v; want 1 and 1", api, ov)
	}
}
