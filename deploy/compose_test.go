package deploy

// The Compose stack in deploy/compose: its structure, the files it
// mounts, the floodgate configuration both replicas load, and the
// Prometheus configuration that scrapes them.

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/floodgate/floodgate/internal/config"
)

const composeDir = "compose"

type composeFile struct {
	Name       string                    `yaml:"name"`
	XFloodgate yaml.Node                 `yaml:"x-floodgate"`
	Services   map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Ports       []string          `yaml:"ports"`
	ReadOnly    bool              `yaml:"read_only"`
	Tmpfs       []string          `yaml:"tmpfs"`
	Restart     string            `yaml:"restart"`
	StopGrace   string            `yaml:"stop_grace_period"`
	DependsOn   yaml.Node         `yaml:"depends_on"`
	Healthcheck *struct {
		Test     []string `yaml:"test"`
		Interval string   `yaml:"interval"`
		Timeout  string   `yaml:"timeout"`
		Retries  int      `yaml:"retries"`
	} `yaml:"healthcheck"`
}

// mount is one bind mount of a service.
type mount struct{ source, target string }

func (s composeService) mounts(t *testing.T) []mount {
	t.Helper()
	var ms []mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || len(parts) > 3 || !strings.HasPrefix(parts[0], ".") {
			t.Errorf("volume %q: want ./relative/source:/target[:ro], a bind mount of a file in the repository", v)
			continue
		}
		if len(parts) == 3 && parts[2] != "ro" {
			t.Errorf("volume %q: mounted %q, want ro", v, parts[2])
		}
		ms = append(ms, mount{source: filepath.Join(composeDir, parts[0]), target: parts[1]})
	}
	return ms
}

func decodeStrict(t *testing.T, file string, v any) {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readFile(t, file)))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

func TestCompose(t *testing.T) {
	var c composeFile
	decodeStrict(t, filepath.Join(composeDir, "compose.yaml"), &c)

	var names []string
	for n := range c.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	if diff := cmp.Diff(names, []string{"floodgate-1", "floodgate-2", "grafana", "prometheus", "valkey"}); diff != "" {
		t.Fatalf("services (-got +want):\n%s", diff)
	}
	for _, n := range names {
		img := noVars(t, c.Services[n].Image)
		if _, tag, ok := strings.Cut(img[strings.LastIndex(img, "/")+1:], ":"); !ok || tag == "" || tag == "latest" {
			t.Errorf("%s: image %q, want one pinned by tag", n, img)
		}
	}

	// Every mounted file or directory is in the repository.
	mounts := map[string][]mount{}
	for _, n := range names {
		mounts[n] = c.Services[n].mounts(t)
		for _, m := range mounts[n] {
			if _, err := os.Stat(m.source); err != nil {
				t.Errorf("%s mounts %s at %s: %v", n, m.source, m.target, err)
			}
		}
	}

	// Both replicas: the same image and configuration, the sample
	// upstream, listeners open to the network, counters in Valkey.
	one, two := c.Services["floodgate-1"], c.Services["floodgate-2"]
	if diff := cmp.Diff(one.Image+strings.Join(one.Command, " ")+strings.Join(one.Volumes, " "),
		two.Image+strings.Join(two.Command, " ")+strings.Join(two.Volumes, " ")); diff != "" {
		t.Errorf("the replicas differ (-floodgate-1 +floodgate-2):\n%s", diff)
	}
	if diff := cmp.Diff(one.Environment, two.Environment); diff != "" {
		t.Errorf("the replicas' environments differ (-floodgate-1 +floodgate-2):\n%s", diff)
	}
	valkeyPort := "6379"
	scrape := map[string]bool{}
	for _, n := range []string{"floodgate-1", "floodgate-2"} {
		s := c.Services[n]
		if diff := cmp.Diff(s.Command, []string{"serve", "--config", "/etc/floodgate/floodgate.yaml", "--sample-upstream"}); diff != "" {
			t.Errorf("%s: command (-got +want):\n%s", n, diff)
		}
		// The configuration's directory is mounted, not the file alone:
		// a file bind-mounted alone stays the one there at start, and a
		// new version renamed over it never reaches the reload.
		var cfgFile string
		for _, m := range mounts[n] {
			switch m.target {
			case "/etc/floodgate":
				cfgFile = filepath.Join(m.source, "floodgate.yaml")
			case "/etc/floodgate/floodgate.yaml":
				t.Errorf("%s mounts the file %s alone: a new version renamed over it would never be reloaded; mount its directory at /etc/floodgate", n, m.source)
			}
		}
		if cfgFile == "" {
			t.Fatalf("%s mounts no configuration directory at /etc/floodgate", n)
		}
		env := map[string]string{}
		for k, v := range s.Environment {
			env[k] = noVars(t, v)
		}
		cfg := loadConfig(t, cfgFile, env)
		u, err := url.Parse(cfg.Store.URL)
		if err != nil || u.Scheme != "redis" || u.Hostname() != "valkey" || u.Port() != valkeyPort {
			t.Errorf("%s: store.url = %q, want redis://valkey:%s, the valkey service", n, cfg.Store.URL, valkeyPort)
		}
		for _, addr := range []string{cfg.Listen, cfg.Admin.Listen} {
			host, port, err := net.SplitHostPort(addr)
			if err != nil || (host != "" && host != "0.0.0.0" && host != "::") {
				t.Errorf("%s: listens on %q: other containers cannot reach it", n, addr)
			}
			if !publishes(s.Ports, port) && addr == cfg.Listen {
				t.Errorf("%s: ports %v do not publish the public listener's port %s", n, s.Ports, port)
			}
		}
		_, adminPort, _ := net.SplitHostPort(cfg.Admin.Listen)
		scrape[n+":"+adminPort] = true
		var deps map[string]struct {
			Condition string `yaml:"condition"`
		}
		if err := s.DependsOn.Decode(&deps); err != nil || deps["valkey"].Condition != "service_healthy" {
			t.Errorf("%s: depends_on = %v (%v), want valkey: {condition: service_healthy}", n, deps, err)
		}
		if !s.ReadOnly {
			t.Errorf("%s: read_only is false: floodgate writes nothing to its filesystem but temporary files", n)
		}
		// A request body beyond server.request_buffer_bytes on a route
		// with request_buffering: on goes to a temporary file in /tmp,
		// which the image (scratch) does not have and read_only forbids.
		if !slices.ContainsFunc(s.Tmpfs, func(m string) bool { return strings.Split(m, ":")[0] == "/tmp" }) {
			t.Errorf("%s: tmpfs %v, want /tmp: a read-only container answers 500 to a request body buffered to a temporary file", n, s.Tmpfs)
		}
		// On stop (SIGTERM) floodgate drains for server.shutdown_grace;
		// Compose kills it after stop_grace_period, 10 s when unset.
		grace, err := config.ParseTimeout(cfg.Server.ShutdownGrace)
		if err != nil {
			t.Fatal(err)
		}
		stop := 10 * time.Second
		if s.StopGrace != "" {
			if stop, err = time.ParseDuration(s.StopGrace); err != nil {
				t.Errorf("%s: stop_grace_period %q: %v", n, s.StopGrace, err)
			}
		}
		if stop <= grace {
			t.Errorf("%s: stop_grace_period %v, want more than server.shutdown_grace %v: Compose kills the replica in the middle of its drain", n, stop, grace)
		}
	}
	if hc := c.Services["valkey"].Healthcheck; hc == nil || len(hc.Test) == 0 {
		t.Error("valkey has no healthcheck, which the replicas wait for")
	}

	t.Run("prometheus", func(t *testing.T) {
		// The configuration as the container sees it: every mount copied
		// to its target under a temporary root.
		root := t.TempDir()
		for _, m := range mounts["prometheus"] {
			dst := filepath.Join(root, m.target)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			copyFile(t, dst, readFile(t, m.source))
		}
		promFile := filepath.Join(root, "etc/prometheus/prometheus.yml")
		var prom struct {
			Global        map[string]string `yaml:"global"`
			RuleFiles     []string          `yaml:"rule_files"`
			ScrapeConfigs []struct {
				JobName       string `yaml:"job_name"`
				StaticConfigs []struct {
					Targets []string `yaml:"targets"`
				} `yaml:"static_configs"`
			} `yaml:"scrape_configs"`
		}
		decodeStrict(t, promFile, &prom)
		got := map[string]bool{}
		for _, sc := range prom.ScrapeConfigs {
			for _, st := range sc.StaticConfigs {
				for _, target := range st.Targets {
					got[target] = true
				}
			}
		}
		if diff := cmp.Diff(got, scrape); diff != "" {
			t.Errorf("scrape targets (-got +want: both replicas' admin listeners):\n%s", diff)
		}
		var alerts bool
		for _, rf := range prom.RuleFiles {
			p := filepath.Join(filepath.Dir(promFile), rf)
			if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, readFile(t, "prometheus/floodgate-alerts.yml")) {
				alerts = true
			}
		}
		if !alerts {
			t.Errorf("rule_files %v: none is deploy/prometheus/floodgate-alerts.yml as mounted", prom.RuleFiles)
		}
		pt, err := exec.LookPath("promtool")
		if err != nil {
			if os.Getenv("FLOODGATE_SKIP_PROMTOOL") == "1" {
				t.Skip("promtool is not installed and FLOODGATE_SKIP_PROMTOOL=1: skipping promtool check config")
			}
			t.Fatal("promtool is not installed: install it (Debian: apt-get install -y prometheus) or set FLOODGATE_SKIP_PROMTOOL=1")
		}
		if out, err := exec.Command(pt, "check", "config", promFile).CombinedOutput(); err != nil {
			t.Errorf("promtool check config: %v\n%s", err, out)
		}
	})

	t.Run("grafana", func(t *testing.T) {
		targets := map[string]string{}
		for _, m := range mounts["grafana"] {
			targets[m.target] = m.source
		}
		dashboard := ""
		for target, source := range targets {
			if filepath.Clean(source) == filepath.Join("grafana", "floodgate.json") {
				dashboard = target
			}
		}
		if dashboard == "" {
			t.Fatal("grafana does not mount deploy/grafana/floodgate.json")
		}
		dsDir := targets["/etc/grafana/provisioning/datasources"]
		dbDir := targets["/etc/grafana/provisioning/dashboards"]
		if dsDir == "" || dbDir == "" {
			t.Fatalf("grafana mounts %v: want provisioning/datasources and provisioning/dashboards", targets)
		}
		var ds struct {
			APIVersion  int `yaml:"apiVersion"`
			Datasources []struct {
				Name      string `yaml:"name"`
				UID       string `yaml:"uid"`
				Type      string `yaml:"type"`
				Access    string `yaml:"access"`
				URL       string `yaml:"url"`
				IsDefault bool   `yaml:"isDefault"`
				Editable  bool   `yaml:"editable"`
			} `yaml:"datasources"`
		}
		decodeStrict(t, filepath.Join(dsDir, "prometheus.yaml"), &ds)
		if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || !ds.Datasources[0].IsDefault ||
			ds.Datasources[0].URL != "http://prometheus:9090" {
			t.Errorf("datasources = %+v, want one default prometheus at http://prometheus:9090 (the dashboard picks the default)", ds.Datasources)
		}
		var db struct {
			APIVersion int `yaml:"apiVersion"`
			Providers  []struct {
				Name            string `yaml:"name"`
				Type            string `yaml:"type"`
				DisableDeletion bool   `yaml:"disableDeletion"`
				AllowUIUpdates  bool   `yaml:"allowUiUpdates"`
				Options         struct {
					Path string `yaml:"path"`
				} `yaml:"options"`
			} `yaml:"providers"`
		}
		decodeStrict(t, filepath.Join(dbDir, "floodgate.yaml"), &db)
		if len(db.Providers) != 1 || db.Providers[0].Type != "file" || db.Providers[0].Options.Path != filepath.Dir(dashboard) {
			t.Errorf("dashboard providers = %+v, want one of type file at %s, where floodgate.json is mounted", db.Providers, filepath.Dir(dashboard))
		}
	})
}

// publishes reports whether ports ("[ip:]host:container") publish the
// container port.
func publishes(ports []string, port string) bool {
	for _, p := range ports {
		if strings.HasSuffix(p, ":"+port) {
			return true
		}
	}
	return false
}
