package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/telemetry"
	"github.com/floodgate/floodgate/internal/upstreamauth"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

func testClients() apiClients {
	sum := sha256.Sum256([]byte("good-token"))
	return newAPIClients(&config.Config{APIClients: config.APIClients{
		Plans:   map[string][]string{"standard": {"100/1m"}},
		Clients: []config.APIClient{{ID: "lab", Plan: "standard", TokenSHA256: hex.EncodeToString(sum[:])}, {ID: "frontend", Plan: "standard"}},
	}})
}

// TestFromBearerHostile: only "Bearer <a listed token>" names a client;
// anything else a client writes names none.
func TestFromBearerHostile(t *testing.T) {
	ac := testClients()
	for _, tc := range []struct {
		name   string
		values []string
		want   string
	}{
		{"listed token", []string{"Bearer good-token"}, "lab"},
		{"scheme in any case", []string{"bearer good-token"}, "lab"},
		{"extra spaces", []string{"Bearer   good-token  "}, "lab"},
		{"unknown token", []string{"Bearer bad-token"}, ""},
		{"the hash itself", []string{"Bearer " + func() string { s := sha256.Sum256([]byte("good-token")); return hex.EncodeToString(s[:]) }()}, ""},
		{"a client id", []string{"Bearer lab"}, ""},
		{"a client without token", []string{"Bearer frontend"}, ""},
		{"empty token", []string{"Bearer "}, ""},
		{"no scheme", []string{"good-token"}, ""},
		{"basic", []string{"Basic good-token"}, ""},
		{"two fields", []string{"Bearer good-token", "Bearer good-token"}, ""},
		{"huge", []string{"Bearer " + strings.Repeat("a", 1<<16)}, ""},
		{"prefix of the token", []string{"Bearer good-toke"}, ""},
		{"token with NUL", []string{"Bearer good-token\x00"}, ""},
		{"none", nil, ""},
	} {
		h := http.Header{}
		if tc.values != nil {
			h["Authorization"] = tc.values
		}
		c, ok := ac.fromBearer(h)
		if c.id != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: client %q (%v), want %q", tc.name, c.id, ok, tc.want)
		}
	}
}

func FuzzFromBearer(f *testing.F) {
	for _, s := range []string{"Bearer good-token", "bearer x", "Basic Zm9v", "", "Bearer", "Bearer \x00"} {
		f.Add(s)
	}
	ac := testClients()
	f.Fuzz(func(t *testing.T, v string) {
		c, ok := ac.fromBearer(http.Header{"Authorization": {v}})
		if ok != (c.id != "") {
			t.Fatalf("ok %v with client %q", ok, c.id)
		}
		if ok {
			scheme, tok, _ := strings.Cut(v, " ")
			if !strings.EqualFold(scheme, "bearer") || strings.TrimSpace(tok) != "good-token" {
				t.Fatalf("%q named client %q", v, c.id)
			}
		}
	})
}

// TestTokenSourcesFollowReloads: a reload keeps the token source of
// unchanged credentials (no new token fetch) and drops those of
// credentials it changed (before: one was kept for every set ever
// configured).
func TestTokenSourcesFollowReloads(t *testing.T) {
	conf := func(clientID string) (*config.File, []byte) {
		yml := `
upstreams:
  api:
    url: http://127.0.0.1:1
    auth: {type: client_credentials, token_url: /token/, client_id: ` + clientID + `, client_secret: s3cret}
`
		f, err := config.Parse("auth.yaml", []byte(yml), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Config.ApplyDefaults()
		return f, []byte(yml)
	}
	metrics := telemetry.NewMetrics("test")
	f, data := conf("first")
	srv, problems := NewServer(f, data, Options{Store: memory.New(memory.Options{}), Metrics: metrics,
		Logger: telemetry.NewLogger(io.Discard, "info")})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	shared := srv.opts.Shared
	sources := func() []*upstreamauth.Source {
		shared.mu.Lock()
		defer shared.mu.Unlock()
		var out []*upstreamauth.Source
		for _, s := range shared.tokens {
			out = append(out, s)
		}
		return out
	}
	first := sources()
	if len(first) != 1 {
		t.Fatalf("%d token sources after start, want 1", len(first))
	}
	if _, problems := srv.Reload(conf("first")); len(problems) > 0 {
		t.Fatal(problems)
	}
	if got := sources(); len(got) != 1 || got[0] != first[0] {
		t.Errorf("unchanged credentials: %d sources, same one %v; want the same one", len(got), len(got) == 1 && got[0] == first[0])
	}
	if _, problems := srv.Reload(conf("second")); len(problems) > 0 {
		t.Fatal(problems)
	}
	if got := sources(); len(got) != 1 || got[0] == first[0] {
		t.Errorf("changed credentials: %d sources (the old one kept: %v), want only the new one", len(got), len(got) > 0 && got[0] == first[0])
	}
}

// TestTokenFetchFollowsNoRedirect: the client credentials go to the token
// endpoint only. A redirect (a 307 or 308 would post them again, to
// another host or over plain http) is a failed fetch that names its
// status.
func TestTokenFetchFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":3600}`)
	}))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/token/", code)
		}))
		src, err := upstreamauth.New(upstreamauth.Options{TokenURL: endpoint.URL + "/token/",
			ClientID: "gateway", ClientSecret: "s3cret", HTTPClient: tokenClient()})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := src.Token(context.Background())
		if err == nil || !strings.Contains(err.Error(), "status "+strconv.Itoa(code)) {
			t.Errorf("a %d from the token endpoint: Token() = %q, %v; want a failed fetch", code, tok, err)
		}
		endpoint.Close()
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want none", n)
	}
}
