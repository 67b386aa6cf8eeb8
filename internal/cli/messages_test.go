package cli

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/testnet"
)

// TestConfigCannotBeRead: a configuration file that is missing or is a
// directory is one line naming the file and the cause, the same from
// every command that reads one.
func TestConfigCannotBeRead(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.yaml")
	for _, tc := range []struct{ file, cause string }{
		{missing, "no such file or directory"},
		{dir, "is a directory"},
	} {
		for _, cmd := range []string{"serve", "validate", "explain", "diff"} {
			args := []string{cmd, "--config", tc.file}
			switch cmd {
			case "explain":
				args = append(args, "GET", "/")
			case "diff":
				args = append(args, "staging", "production")
			}
			code, _, stderr := run(t, nil, args...)
			want := "config: cannot read " + tc.file + ": " + tc.cause
			if code == 0 || !strings.Contains(stderr, want) || strings.Contains(stderr, "read open") ||
				strings.Contains(stderr, "open "+tc.file) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("floodgate %s: exit %d, stderr:\n%s\nwant one line with %q", strings.Join(args, " "), code, stderr, want)
			}
		}
	}
}

// TestListenerInUse: a listener that cannot listen says how to choose
// another address: the flag, the environment variable when the file
// takes the address from one, and the configuration key.
func TestListenerInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	busy := held.Addr().String()
	free := []string{testnet.FreeAddr(t), testnet.FreeAddr(t)}
	const example = "../../examples/mavedb.yaml"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"public", []string{"--listen", busy, "--admin-listen", free[0]},
			"public listener: listen tcp " + busy + ": bind: address already in use (choose another address with --listen, FLOODGATE_LISTEN or listen in " + example + ")"},
		{"admin", []string{"--listen", free[1], "--admin-listen", busy},
			"admin listener: listen tcp " + busy + ": bind: address already in use (choose another address with --admin-listen, FLOODGATE_ADMIN_LISTEN or admin.listen in " + example + ")"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, map[string]string{"FLOODGATE_UPSTREAM": "http://127.0.0.1:9"},
				append([]string{"serve", "--config", example, "--no-watch"}, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant %q", code, stderr, tc.want)
			}
		})
	}
}

// TestServeReportsABrokenConfigAlone: a configuration that loads but does
// not compile is reported as text, with no log line (JSON) before it.
func TestServeReportsABrokenConfigAlone(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "broken.yaml")
	yaml := "upstreams: {api: {url: \"http://127.0.0.1:9\"}}\n" +
		"rules:\n  - {name: odd, when: \"request.no_such_field == 1\", limits: [1/1m]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, nil, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--admin-listen", "off")
	if code == 0 || !strings.Contains(stderr, "broken.yaml") || strings.Contains(stderr, "{\"time\"") {
		t.Errorf("exit %d, stderr:\n%s\nwant the problem alone, no log line", code, stderr)
	}
}

// TestServeStoreFlagChecked: a --store URL floodgate cannot use is a
// mistake on the command line, said as validate says one in store.url
// (with the forms allowed, memory among them) and naming the flag, since
// the file is not where it is.
func TestServeStoreFlagChecked(t *testing.T) {
	const allowed = " (allowed: memory, redis://host:port[/db], rediss://host:port, redis://host1:port1,host2:port2,…, valkey://…, valkeys://…)\n"
	for _, tc := range []struct{ store, problem string }{
		{"mem", "url must start with redis://, rediss://, valkey:// or valkeys://"},
		{"127.0.0.1:6379", "url must start with redis://, rediss://, valkey:// or valkeys://"},
		{"http://:hunter2@cache:6379", `url scheme "http" is not redis, rediss, valkey or valkeys`},
	} {
		code, _, stderr := run(t, map[string]string{"FLOODGATE_UPSTREAM": "http://127.0.0.1:9"},
			"serve", "--config", "../../examples/mavedb.yaml", "--no-watch", "--store", tc.store)
		if want := "floodgate serve: --store: " + tc.problem + allowed; code != 2 || stderr != want {
			t.Errorf("serve --store %s: exit %d, stderr:\n%s\nwant exit 2 and %q", tc.store, code, stderr, want)
		}
	}
}

// TestServeReportsAStoreURLAsValidateDoes: serve makes the store before it
// compiles the rules, and a store.url it cannot use is still a problem of
// the file, at its line with the forms allowed, as validate says it: not
// the store package's error, which names neither the file nor the field.
func TestServeReportsAStoreURLAsValidateDoes(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "store.yaml")
	yaml := "upstreams: {api: {url: \"http://127.0.0.1:9\"}}\n" +
		"store:\n  url: ${REDIS_URL:-memory}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"REDIS_URL": "cache.internal:6379"}
	want := cfg + ":3: store.url: url must start with redis://, rediss://, valkey:// or valkeys:// " +
		"(allowed: memory, redis://host:port[/db], rediss://host:port, redis://host1:port1,host2:port2,…, valkey://…, valkeys://…)\n" +
		cfg + ": 1 problem\n"
	_, _, validated := run(t, env, "validate", "--config", cfg)
	if validated != want {
		t.Fatalf("validate: stderr:\n%s\nwant\n%s", validated, want)
	}
	code, _, stderr := run(t, env, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--admin-listen", "off", "--no-watch")
	if code != 1 || stderr != want {
		t.Errorf("serve: exit %d, stderr:\n%s\nwant exit 1 and, as validate:\n%s", code, stderr, want)
	}
}

// TestServeListenFlagsChecked: a listen address given on the command line
// that floodgate cannot use, or that collides with another listener, is a
// mistake on the command line, said as validate says one in the file and
// naming the flag, since the file is not where it is (its line may well
// hold the right address).
func TestServeListenFlagsChecked(t *testing.T) {
	const example = "../../examples/mavedb.yaml" // listen 127.0.0.1:8080, admin.listen 127.0.0.1:9090
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "nonsense"}, `--listen: "nonsense" is not host:port (missing port), such as 127.0.0.1:8080 or :8080`},
		{[]string{"--listen", "127.0.0.1:99999"}, `--listen: "127.0.0.1:99999" is not host:port (port "99999" is not a number from 0 to 65535), such as 127.0.0.1:8080 or :8080`},
		{[]string{"--admin-listen", "admin"}, `--admin-listen: "admin" is not host:port (missing port), such as 127.0.0.1:9090, nor "off"`},
		{[]string{"--internal-listen", "internal"}, `--internal-listen: "internal" is neither host:port (missing port) nor unix:/path/to.sock`},
		{[]string{"--admin-listen", "127.0.0.1:8080"}, `--admin-listen: "127.0.0.1:8080" is also the public listen address`},
		{[]string{"--listen", "127.0.0.1:7000", "--admin-listen", "127.0.0.1:7000"}, `--admin-listen: "127.0.0.1:7000" is also the public listen address, given by --listen`},
		{[]string{"--internal-listen", "127.0.0.1:9090"}, `--internal-listen: "127.0.0.1:9090" is also the admin listen address`},
		{[]string{"--internal-listen", "127.0.0.1:8080"}, `--internal-listen: "127.0.0.1:8080" is also the public listen address`},
		{[]string{"--listen", "127.0.0.1:9090"}, `--listen: "127.0.0.1:9090" is also the admin listen address`},
		{[]string{"--admin-listen", "127.0.0.1:7000", "--internal-listen", "127.0.0.1:7000"}, `--internal-listen: "127.0.0.1:7000" is also the admin listen address, given by --admin-listen`},
	} {
		code, _, stderr := run(t, map[string]string{"FLOODGATE_UPSTREAM": "http://127.0.0.1:9"},
			append([]string{"serve", "--config", example, "--no-watch"}, tc.args...)...)
		if want := "floodgate serve: " + tc.want + "\n"; code != 2 || stderr != want {
			t.Errorf("serve %s: exit %d, stderr:\n%s\nwant exit 2 and %q", strings.Join(tc.args, " "), code, stderr, want)
		}
	}
}

// TestDemoListenFlagsChecked: demo's listen flags are command-line
// mistakes too, not problems of its built-in configuration.
func TestDemoListenFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "nonsense"}, `--listen: "nonsense" is not host:port (missing port), such as 127.0.0.1:8080 or :8080`},
		// demo's public address is always --listen's, by default 127.0.0.1:8080.
		{[]string{"--admin-listen", "127.0.0.1:8080"}, `--admin-listen: "127.0.0.1:8080" is also the public listen address, given by --listen`},
	} {
		code, _, stderr := run(t, nil, append([]string{"demo"}, tc.args...)...)
		if want := "floodgate demo: " + tc.want + "\n"; code != 2 || stderr != want {
			t.Errorf("demo %s: exit %d, stderr:\n%s\nwant exit 2 and %q", strings.Join(tc.args, " "), code, stderr, want)
		}
	}
}

// TestEnvFlagNotDefined: an environment name the file does not define is
// a mistake on the command line, said by every command that takes one and
// naming the flag with the names the file defines, not a problem at the
// line of the file's environments key, which is right.
func TestEnvFlagNotDefined(t *testing.T) {
	const example = "../../examples/mavedb.yaml" // environments production and staging
	none := writeConfig(t, base)
	log := writeConfig(t, "")
	for _, tc := range []struct {
		file string
		args []string
		want string
	}{
		{example, []string{"serve", "--no-watch", "--env", "prod"},
			`floodgate serve: --env: environment "prod" is not defined (allowed: production, staging)`},
		{example, []string{"validate", "--env", "prod"},
			`floodgate validate: --env: environment "prod" is not defined (allowed: production, staging)`},
		{example, []string{"explain", "--env", "prod", "GET", "/"},
			`floodgate explain: --env: environment "prod" is not defined (allowed: production, staging)`},
		{example, []string{"replay", "--env", "prod", log},
			`floodgate replay: --env: environment "prod" is not defined (allowed: production, staging)`},
		{example, []string{"diff", "staging", "prod"},
			`floodgate diff: environment "prod" is not defined (allowed: production, staging)`},
		{none, []string{"serve", "--no-watch", "--env", "production"},
			`floodgate serve: --env: environment "production" is not defined (the file has no environments section)`},
		{none, []string{"validate", "--env", "production"},
			`floodgate validate: --env: environment "production" is not defined (the file has no environments section)`},
		{none, []string{"replay", "--env", "production", log},
			`floodgate replay: --env: environment "production" is not defined (the file has no environments section)`},
		{none, []string{"diff", "staging", "production"},
			`floodgate diff: environment "staging" is not defined (the file has no environments section)`},
	} {
		args := append([]string{tc.args[0], "--config", tc.file}, tc.args[1:]...)
		code, _, stderr := run(t, map[string]string{"FLOODGATE_UPSTREAM": "http://127.0.0.1:9"}, args...)
		if want := tc.want + "\n"; code != 2 || stderr != want {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 2 and %q", strings.Join(args, " "), code, stderr, want)
		}
	}
}
