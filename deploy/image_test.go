package deploy

// The container image built from the root Dockerfile: offline, with podman
// (or docker), from a binary built here as scripts/release builds it.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	imageVersion  = "v0.0.0-imagetest"
	imageRevision = "0123456789abcdef0123456789abcdef01234567"
	imageCreated  = "2026-01-02T03:04:05Z"
	caBundle      = "/etc/ssl/certs/ca-certificates.crt"
)

// engine runs a container engine's commands; podman gets storage of its
// own in a temporary directory, so the test neither needs nor touches the
// machine's images.
type engine struct {
	name string
	base []string
}

func (e engine) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, e.name, append(slices.Clone(e.base), args...)...)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %v\n%s", e.name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out, nil
}

// workingEngine returns podman, or docker, whichever answers `info`; a
// client without an engine (docker with no daemon) does not count.
func workingEngine(t *testing.T, ctx context.Context) engine {
	t.Helper()
	var tried []string
	if _, err := exec.LookPath("podman"); err == nil {
		dir := t.TempDir()
		e := engine{name: "podman", base: []string{
			"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run"),
			"--storage-driver", "vfs",
		}}
		t.Cleanup(func() {
			// Images under the temporary root, so that removing it works
			// for rootless podman too.
			_, _ = e.run(context.Background(), "rmi", "--all", "--force")
		})
		out, err := e.run(ctx, "info")
		if err == nil {
			return e
		}
		tried = append(tried, fmt.Sprintf("podman info failed: %v %s", err, out))
	} else {
		tried = append(tried, "podman is not installed")
	}
	if _, err := exec.LookPath("docker"); err == nil {
		e := engine{name: "docker"}
		out, err := e.run(ctx, "info")
		if err == nil {
			return e
		}
		tried = append(tried, fmt.Sprintf("docker info failed (a client without an engine?): %v %s", err, out))
	} else {
		tried = append(tried, "docker is not installed")
	}
	t.Skipf("no working container engine, skipping the image build (Debian: apt-get install -y podman): %s", strings.Join(tried, "; "))
	return engine{}
}

// imageConfig is what `image inspect` says of an image, in podman's and
// docker's shared field names.
type imageConfig struct {
	Architecture string
	Os           string
	Config       struct {
		User         string
		Entrypoint   []string
		Cmd          []string
		Labels       map[string]string
		ExposedPorts map[string]struct{}
		Healthcheck  *json.RawMessage
		WorkingDir   string
		Volumes      map[string]struct{}
	}
}

func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds floodgate and a container image: not in -short mode")
	}
	if os.Getenv("FLOODGATE_SKIP_IMAGE") != "" {
		t.Skip("FLOODGATE_SKIP_IMAGE is set: not building the container image")
	}
	ctx := t.Context()
	e := workingEngine(t, ctx)

	// The build context, laid out as the Dockerfile expects.
	bc := t.TempDir()
	binName := "floodgate_linux_" + runtime.GOARCH
	for _, d := range []string{"dist", "deploy/container"} {
		if err := os.MkdirAll(filepath.Join(bc, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X github.com/floodgate/floodgate/internal/version.Version="+imageVersion,
		"-o", filepath.Join(bc, "dist", binName), "../cmd/floodgate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	certs, err := os.ReadFile(caBundle)
	if err != nil {
		t.Fatalf("the image takes the build machine's CA certificates: %v (Debian: apt-get install -y ca-certificates)", err)
	}
	copyFile(t, filepath.Join(bc, "dist", "ca-certificates.crt"), certs)
	copyFile(t, filepath.Join(bc, ".dockerignore"), readFile(t, "../.dockerignore"))
	defaultConfig := readFile(t, "container/floodgate.yaml")
	copyFile(t, filepath.Join(bc, "deploy", "container", "floodgate.yaml"), defaultConfig)
	binary := readFile(t, filepath.Join(bc, "dist", binName))

	tag := "localhost/floodgate-imagetest:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if out, err := e.run(ctx, "build", "--platform", "linux/"+runtime.GOARCH,
		"--build-arg", "VERSION="+imageVersion,
		"--build-arg", "REVISION="+imageRevision,
		"--build-arg", "CREATED="+imageCreated,
		"-f", "../Dockerfile", "-t", tag, bc); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	if e.name == "docker" {
		t.Cleanup(func() { _, _ = e.run(context.Background(), "rmi", "--force", tag) })
	}

	t.Run("config", func(t *testing.T) {
		out, err := e.run(ctx, "image", "inspect", tag)
		if err != nil {
			t.Fatal(err)
		}
		var imgs []imageConfig
		if err := json.Unmarshal(out, &imgs); err != nil || len(imgs) != 1 {
			t.Fatalf("image inspect: %v, %d images\n%s", err, len(imgs), out)
		}
		img := imgs[0]
		if img.Os != "linux" || img.Architecture != runtime.GOARCH {
			t.Errorf("platform = %s/%s, want linux/%s", img.Os, img.Architecture, runtime.GOARCH)
		}
		c := img.Config
		if err := checkNonRootUser(c.User); err != nil {
			t.Error(err)
		}
		if diff := cmp.Diff(c.Entrypoint, []string{"/floodgate"}); diff != "" {
			t.Errorf("entrypoint (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(c.Cmd, []string{"serve", "--config", "/etc/floodgate/floodgate.yaml"}); diff != "" {
			t.Errorf("cmd (-got +want):\n%s", diff)
		}
		if diff := cmp.Diff(c.ExposedPorts, map[string]struct{}{"8080/tcp": {}, "9090/tcp": {}}); diff != "" {
			t.Errorf("exposed ports (-got +want):\n%s", diff)
		}
		if c.Healthcheck != nil && string(*c.Healthcheck) != "null" {
			t.Errorf("healthcheck = %s, want none: orchestrators probe /healthz and /readyz", *c.Healthcheck)
		}
		if len(c.Volumes) != 0 {
			t.Errorf("volumes = %v, want none", c.Volumes)
		}
		want := map[string]string{
			"org.opencontainers.image.title":    "floodgate",
			"org.opencontainers.image.version":  imageVersion,
			"org.opencontainers.image.revision": imageRevision,
			"org.opencontainers.image.created":  imageCreated,
			"org.opencontainers.image.source":   "https://github.com/floodgate/floodgate",
		}
		for k, v := range want {
			if got := c.Labels[k]; got != v {
				t.Errorf("label %s = %q, want %q", k, got, v)
			}
		}
		if c.Labels["org.opencontainers.image.licenses"] == "" {
			t.Error("label org.opencontainers.image.licenses is missing")
		}
	})

	t.Run("files", func(t *testing.T) {
		archive := filepath.Join(t.TempDir(), "image.tar")
		args := []string{"save", "-o", archive, tag}
		if e.name == "podman" {
			args = []string{"save", "--format", "oci-archive", "-o", archive, tag}
		}
		if _, err := e.run(ctx, args...); err != nil {
			t.Fatal(err)
		}
		files, err := imageFiles(archive)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for name := range files {
			names = append(names, name)
		}
		slices.Sort(names)
		wantNames := []string{
			"etc/", "etc/floodgate/", "etc/floodgate/floodgate.yaml",
			"etc/ssl/", "etc/ssl/certs/", "etc/ssl/certs/ca-certificates.crt",
			"floodgate",
		}
		if diff := cmp.Diff(names, wantNames); diff != "" {
			t.Fatalf("the image's files (-got +want): it holds the binary, the certificates and the default configuration only\n%s", diff)
		}
		for name, want := range map[string][]byte{
			"floodgate":                         binary,
			"etc/ssl/certs/ca-certificates.crt": certs,
			"etc/floodgate/floodgate.yaml":      defaultConfig,
		} {
			f := files[name]
			if sha256.Sum256(f.data) != sha256.Sum256(want) {
				t.Errorf("%s: %d bytes, not the %d bytes of the build context's file", name, len(f.data), len(want))
			}
			if f.uid != 0 || f.mode&0o222 != 0 {
				t.Errorf("%s: owner %d, mode %o; want root's and read-only, so the process cannot change it", name, f.uid, f.mode)
			}
		}
		if m := files["floodgate"].mode; m&0o111 == 0 {
			t.Errorf("floodgate: mode %o, not executable", m)
		}

		// The binary from the image, run here: its version is the one
		// stamped at build time, and the default configuration validates
		// as it is, with no variable set.
		dir := t.TempDir()
		bin := filepath.Join(dir, "floodgate")
		if err := os.WriteFile(bin, files["floodgate"].data, 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, "floodgate.yaml")
		copyFile(t, cfg, files["etc/floodgate/floodgate.yaml"].data)
		out := runBinary(t, ctx, bin, nil, "version")
		if !strings.Contains(out, imageVersion) {
			t.Errorf("floodgate version = %q, want it to name %s", out, imageVersion)
		}
		out = runBinary(t, ctx, bin, nil, "validate", "--config", cfg)
		for _, want := range []string{"listen:    127.0.0.1:8080", "admin:     127.0.0.1:9090", "mode:      log-only"} {
			if !strings.Contains(out, want) {
				t.Errorf("validate of the default configuration, no variables set: no %q in\n%s", want, out)
			}
		}
		out = runBinary(t, ctx, bin, []string{"FLOODGATE_LISTEN=0.0.0.0:8080", "FLOODGATE_ADMIN_LISTEN=0.0.0.0:9090"},
			"validate", "--config", cfg)
		for _, want := range []string{"listen:    0.0.0.0:8080", "admin:     0.0.0.0:9090"} {
			if !strings.Contains(out, want) {
				t.Errorf("validate of the default configuration with the listeners set: no %q in\n%s", want, out)
			}
		}
	})
}

// checkNonRootUser checks an image's USER: numeric, so that Kubernetes'
// runAsNonRoot can verify it, and neither user nor group root.
func checkNonRootUser(user string) error {
	u, g, ok := strings.Cut(user, ":")
	if !ok {
		g = u
	}
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if err := errors.Join(err1, err2); err != nil || user == "" {
		return fmt.Errorf("user %q: want numeric uid:gid", user)
	}
	if uid == 0 || gid == 0 {
		return fmt.Errorf("user %q: want neither uid nor gid 0", user)
	}
	return nil
}

// runBinary runs bin with args and only the environment given (and PATH).
func runBinary(t *testing.T, ctx context.Context, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

type imageFile struct {
	mode int64
	uid  int
	data []byte
}

// imageFiles reads an image archive, OCI layout (podman save --format
// oci-archive, docker save since 25) or docker-archive, and returns the
// files of its layers, applied in order, by path ("dir/" for directories).
func imageFiles(archive string) (map[string]imageFile, error) {
	blobs := map[string][]byte{}
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			blobs[path.Clean(h.Name)] = b
		}
	}
	var layers []string
	if m, ok := blobs["manifest.json"]; ok { // docker-archive
		var ms []struct{ Layers []string }
		if err := json.Unmarshal(m, &ms); err != nil || len(ms) != 1 {
			return nil, fmt.Errorf("manifest.json: %v, %d images", err, len(ms))
		}
		layers = ms[0].Layers
	} else {
		var index struct{ Manifests []struct{ Digest string } }
		if err := json.Unmarshal(blobs["index.json"], &index); err != nil || len(index.Manifests) != 1 {
			return nil, fmt.Errorf("index.json: %v, %d manifests", err, len(index.Manifests))
		}
		var m struct{ Layers []struct{ Digest string } }
		if err := json.Unmarshal(blobs[blobPath(index.Manifests[0].Digest)], &m); err != nil {
			return nil, fmt.Errorf("manifest %s: %v", index.Manifests[0].Digest, err)
		}
		for _, l := range m.Layers {
			layers = append(layers, blobPath(l.Digest))
		}
	}
	files := map[string]imageFile{}
	for _, l := range layers {
		b, ok := blobs[path.Clean(l)]
		if !ok {
			return nil, fmt.Errorf("layer %s is not in the archive", l)
		}
		var r io.Reader = bytes.NewReader(b)
		if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			if r, err = gzip.NewReader(r); err != nil {
				return nil, fmt.Errorf("layer %s: %w", l, err)
			}
		}
		lr := tar.NewReader(r)
		for {
			h, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", l, err)
			}
			name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
			if strings.HasPrefix(path.Base(name), ".wh.") {
				return nil, fmt.Errorf("layer %s: whiteout %s: a layer removes a file", l, name)
			}
			switch h.Typeflag {
			case tar.TypeDir:
				files[name+"/"] = imageFile{mode: h.Mode, uid: h.Uid}
			case tar.TypeReg:
				data, err := io.ReadAll(lr)
				if err != nil {
					return nil, err
				}
				files[name] = imageFile{mode: h.Mode, uid: h.Uid, data: data}
			default:
				files[name] = imageFile{mode: h.Mode, uid: h.Uid} // links, devices: listed, so the test sees them
			}
		}
	}
	return files, nil
}

func blobPath(digest string) string {
	alg, hex, _ := strings.Cut(digest, ":")
	return path.Join("blobs", alg, hex)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestContainerDefaultConfig: the image's default configuration validates
// with no variable set, and then listens on loopback only; the variables
// open the listeners.
func TestContainerDefaultConfig(t *testing.T) {
	const file = "container/floodgate.yaml"
	c := loadConfig(t, file, nil)
	for _, addr := range []string{c.Listen, c.Admin.Listen} {
		if host, _, err := net.SplitHostPort(addr); err != nil || !netip.MustParseAddr(host).IsLoopback() {
			t.Errorf("with no variable set, a listener is on %q: want loopback", addr)
		}
	}
	if c.Mode != "log-only" || c.Store.URL != "memory" || c.Admin.Token != "" {
		t.Errorf("mode %q, store %q, admin token set %v: want log-only, memory, none", c.Mode, c.Store.URL, c.Admin.Token != "")
	}
	c = loadConfig(t, file, map[string]string{
		"FLOODGATE_LISTEN":       "0.0.0.0:8080",
		"FLOODGATE_ADMIN_LISTEN": "0.0.0.0:9090",
		"FLOODGATE_MODE":         "enforce",
		"REDIS_URL":              "rediss://redis.example:6380",
		"FLOODGATE_UPSTREAM":     "https://api.example",
	})
	got := []string{c.Listen, c.Admin.Listen, c.Mode, c.Store.URL, c.Upstreams["api"].URL}
	want := []string{"0.0.0.0:8080", "0.0.0.0:9090", "enforce", "rediss://redis.example:6380", "https://api.example"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("with the variables set (-got +want):\n%s", diff)
	}
}
