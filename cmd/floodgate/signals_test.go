package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floodgate/floodgate/internal/testnet"
)

// TestMain runs main itself when FLOODGATE_TEST_MAIN is set, so that a
// test can send signals to a real floodgate process: this test binary.
func TestMain(m *testing.M) {
	if os.Getenv("FLOODGATE_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestSecondSignalStopsAtOnce: the first SIGTERM drains (readiness goes
// to 503, the request in flight keeps running, the grace is an hour); a
// second one ends the process at once, by the signal.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) { testSecondSignalStopsAtOnce(t, sig) })
	}
}

func testSecondSignalStopsAtOnce(t *testing.T, sig syscall.Signal) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	defer up.Close()
	defer close(release) // before up.Close, which waits for the handler

	var cmd *exec.Cmd
	var pub, adm string
	for attempt := 1; ; attempt++ {
		pub, adm = testnet.FreeAddr(t), testnet.FreeAddr(t)
		conf := filepath.Join(t.TempDir(), "floodgate.yaml")
		yaml := "listen: " + pub + "\nadmin: {listen: \"" + adm + "\"}\nserver: {shutdown_grace: 1h}\n" +
			"upstreams: {api: {url: \"" + up.URL + "\", timeouts: {response_header: 1h}}}\nrules:\n  - {name: per-ip, limits: [100/1m]}\n"
		if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(os.Args[0], "serve", "--config", conf, "--no-watch")
		cmd.Env = append(os.Environ(), "FLOODGATE_TEST_MAIN=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if answers(t, cmd, "http://"+adm+"/healthz", 200) {
			break
		}
		if attempt == 3 {
			t.Fatal("floodgate never answered on its admin listener")
		}
	}
	go func() {
		if resp, err := http.Get("http://" + pub + "/slow"); err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if !answers(t, cmd, "http://"+adm+"/readyz", 503) {
		t.Fatal("the first signal did not start the drain")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	// An hour's grace is left: only the second signal can end it so soon.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("floodgate ended with %v, want to be ended by %v", err, sig)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
			t.Errorf("floodgate ended with %v, want to be ended by %v", err, sig)
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("floodgate was still draining after a second %v", sig)
	}
}

// answers polls url until it answers with code (true) or the process
// ends (false): it waits for start-up or the drain, it times nothing.
func answers(t *testing.T, cmd *exec.Cmd, url string, code int) bool {
	t.Helper()
	for range 1000 {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == code {
				return true
			}
		}
		var ws syscall.WaitStatus
		if pid, _ := syscall.Wait4(cmd.Process.Pid, &ws, syscall.WNOHANG, nil); pid == cmd.Process.Pid {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestSIGHUPWhileStarting: a SIGHUP that arrives while floodgate reads its
// configuration (`systemctl reload` just after `systemctl start`) does not
// end it: it is a reload once floodgate runs.
func TestSIGHUPWhileStarting(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	// The configuration is a named pipe: opening it to write waits for
	// floodgate to open it to read, so the signal is sent while it starts.
	fifo := filepath.Join(t.TempDir(), "floodgate.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipe: %v", err)
	}
	pub, adm := testnet.FreeAddr(t), testnet.FreeAddr(t)
	yaml := "listen: " + pub + "\nadmin: {listen: \"" + adm + "\"}\n" +
		"upstreams: {api: {url: \"" + up.URL + "\"}}\nrules:\n  - {name: per-ip, limits: [100/1m]}\n"
	feed := func() {
		t.Helper()
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := w.WriteString(yaml); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "serve", "--config", fifo, "--no-watch")
	cmd.Env = append(os.Environ(), "FLOODGATE_TEST_MAIN=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			w = nil
		}
		opened <- w
	}()
	w := <-opened
	if w == nil {
		t.Fatal("cannot open the configuration's pipe")
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	w.WriteString(yaml)
	w.Close()
	if !answers(t, cmd, "http://"+adm+"/healthz", 200) {
		t.Fatalf("floodgate did not survive a SIGHUP while starting; stderr:\n%s", stderr.String())
	}
	feed() // the reload the SIGHUP asked for reads the file again
	reloaded := false
	for i := 0; i < 500 && !reloaded; i++ {
		if resp, err := http.Get("http://" + adm + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			reloaded = strings.Contains(string(b), `floodgate_config_reloads_total{result="success"} 2`)
		}
		if !reloaded {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("floodgate ended with %v, want exit 0; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"configuration reloaded","reason":"SIGHUP"`) {
		t.Errorf("the SIGHUP sent while starting was not a reload; stderr:\n%s", stderr.String())
	}
}
