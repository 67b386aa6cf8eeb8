package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"

	"github.com/floodgate/floodgate/examples"
	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/demo"
	"github.com/floodgate/floodgate/internal/gateway"
)

func init() {
	register("demo", 5, "[--listen ADDR] [--admin-listen ADDR] [--log-only]", runDemo)
}

// demoLimits are the limits the demo lowers so that a person sees a 429
// after a few searches, by rule of examples/openverse.yaml.
var demoLimits = map[string][]string{
	"per-session":         {"10/1m"},
	"api-without-session": {"5/1m"},
}

// runDemo serves examples/openverse.yaml (built in) in front of a sample
// media API and frontend on loopback, with fresh credentials and secrets:
// everything the production environment needs, nothing from outside.
func runDemo(ctx context.Context, env environ, args []string) error {
	fs := newFlags(env, "demo", "[flags]")
	listen := fs.String("listen", "127.0.0.1:8080", "public listener `address`: open it in a browser")
	adminListen := fs.String("admin-listen", "127.0.0.1:9090", "admin listener `address` (metrics, dashboard, mode switch)")
	logOnly := fs.Bool("log-only", false, "start in log-only mode, as the example does, instead of enforcing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	apiAddr, err := freeLoopback()
	if err != nil {
		return err
	}
	frontAddr, err := freeLoopback()
	if err != nil {
		return err
	}
	clientID, clientSecret := "demo-frontend", randomHex(24)
	vars := map[string]string{
		"FLOODGATE_INTERNAL_LISTEN":   config.ListenOff,
		"FLOODGATE_API_UPSTREAM":      "http://" + apiAddr,
		"FLOODGATE_FRONTEND_UPSTREAM": "http://" + frontAddr,
		"FLOODGATE_TRUSTED_PROXIES":   "",
		"FLOODGATE_ADMIN_TOKEN":       randomHex(16),
		"HMAC_SIGNING_SECRET":         randomHex(32),
		"API_CLIENT_ID":               clientID,
		"API_CLIENT_SECRET":           clientSecret,
	}
	denv := env
	denv.lookup = func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	sf := serveFlags{
		file: "examples/openverse.yaml (built in)", env: "production", data: examples.Openverse,
		listen: *listen, adminListen: *adminListen,
		edit: func(c *config.Config) {
			if !*logOnly {
				c.Mode = config.ModeEnforce
			}
			for i := range c.Rules {
				if l, ok := demoLimits[c.Rules[i].Name]; ok {
					c.Rules[i].Limits = slices.Clone(l)
				}
			}
		},
	}
	hooks := serveHooks{
		noWatch: true,
		extra: []extraServer{
			{"demo media API", apiAddr, demo.MediaAPI(demo.APIOptions{ClientID: clientID, ClientSecret: clientSecret})},
			{"demo frontend", frontAddr, demo.Frontend()},
		},
		started: func(srv *gateway.Server) {
			mode := "enforce"
			if srv.LogOnly() {
				mode = "log-only: nothing is refused, would-blocks are counted"
			}
			admin := "http://" + *adminListen
			fmt.Fprintf(env.stdout, `floodgate demo: examples/openverse.yaml in front of a sample media API and web frontend.

  Open http://%s/ and search. After %s searches a minute (one session; each
  page load counts as one too), the page shows floodgate's 429 message. Limits lowered for the demo: per-session
  %s, api-without-session %s (the example says 60/1m and 20/1m).

  mode         %s
  metrics      %s/metrics
  dashboard    %s/admin/   (open it in a browser and sign in with the admin token)
  admin token  %s
  switch       curl -X PUT -H 'Authorization: Bearer %s' -d '{"mode":"log-only"}' %s/admin/mode
               (or the dashboard's switch button)

Press Ctrl-C to stop.
`, *listen, "10", demoLimits["per-session"][0], demoLimits["api-without-session"][0], mode,
				admin, admin, vars["FLOODGATE_ADMIN_TOKEN"], vars["FLOODGATE_ADMIN_TOKEN"], admin)
		},
	}
	return serve(ctx, denv, sf, hooks)
}

// freeLoopback returns a loopback address with a port free a moment ago.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("demo: no free loopback port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
