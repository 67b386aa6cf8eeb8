// Package redistest starts real Redis servers for tests: a single
// redis-server on a free loopback port in a temporary directory, with
// Stop, Kill, Pause and Restart for failure tests, and a three-node Redis
// Cluster made with `redis-cli --cluster create`.
//
// The servers are the ones installed on the machine (Debian packages
// redis-server and redis-tools; scripts/test installs them). Set
// FLOODGATE_REDIS_SERVER and FLOODGATE_REDIS_CLI to use other binaries,
// such as valkey-server and valkey-cli. When redis-server is missing, Start
// fails the test and says how to install it, unless FLOODGATE_SKIP_REDIS=1,
// which skips the test instead.
//
// Servers keep nothing on disk (no RDB, no AOF), listen on 127.0.0.1 only,
// and are killed when the test ends (t.Cleanup) or, on Linux, when the test
// binary dies. Waits are polls with deadlines, never fixed sleeps.
//
// This package speaks just enough of the Redis protocol (Server.Do) to
// check readiness and run administrative commands: the only package of
// floodgate that imports a Redis client is ratelimit/redisstore.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables that change where the servers come from.
const (
	// EnvSkip, set to 1, makes Start skip the test when redis-server is
	// not installed, instead of failing it.
	EnvSkip = "FLOODGATE_SKIP_REDIS"
	// EnvServer names the server binary. Default: redis-server in PATH.
	EnvServer = "FLOODGATE_REDIS_SERVER"
	// EnvCLI names the client binary used to create clusters. Default:
	// redis-cli in PATH.
	EnvCLI = "FLOODGATE_REDIS_CLI"
)

// ReadyTimeout bounds every wait for a server to start, stop or join a
// cluster. It is generous: the machines tests run on are shared and slow
// at times, and a wait ends as soon as its condition holds.
const ReadyTimeout = 30 * time.Second

// A Server is a redis-server process started by Start. Its methods are
// safe for concurrent use, and fail the test (t.Fatal) on errors, so call
// them from the test's goroutine, except Do, Addr, URL and Port.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string // extra configuration, "--name", "value" pairs

	mu     sync.Mutex
	cmd    *exec.Cmd     // nil when not running
	exited chan struct{} // closed when cmd has exited
}

// Start starts a redis-server on a free loopback port, in a new
// temporary directory, and waits until it answers. args are extra
// configuration directives as redis-server takes them on its command line
// ("--maxmemory", "10mb"). The server is killed when the test ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{t: t, bin: binary(t, EnvServer, "redis-server"), dir: t.TempDir(), args: args}
	t.Cleanup(s.cleanup)
	s.startFree()
	return s
}

// binary returns the path of a Redis binary, or ends the test.
func binary(t testing.TB, env, name string) string {
	t.Helper()
	if b := os.Getenv(env); b != "" {
		name = b
	}
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if os.Getenv(EnvSkip) == "1" {
		t.Skipf("%s not found and %s=1: skipping a test that needs a real Redis", name, EnvSkip)
	}
	t.Fatalf("%s not found (%v). Install it with:\n\tapt-get update && apt-get install -y redis-server redis-tools\n"+
		"(scripts/test does this), point %s at another binary, or set %s=1 to skip the tests that need Redis.",
		name, err, env, EnvSkip)
	return ""
}

// startFree starts the server on a port that was free a moment ago,
// trying other ports if another process takes it first.
func (s *Server) startFree() {
	s.t.Helper()
	var err error
	for range 5 {
		s.port = FreePort(s.t)
		if err = s.start(); err == nil {
			return
		}
	}
	s.t.Fatalf("redistest: start redis-server: %v", err)
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's TCP port. It stays the same across Restart.
func (s *Server) Port() int { return s.port }

// URL returns the server's address as redis://127.0.0.1:PORT.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// start launches the process on s.port and waits until it answers.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("already running")
	}
	logfile := filepath.Join(s.dir, "redis.log")
	args := append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--logfile", logfile,
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--protected-mode", "no",
	}, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	err := s.waitReady(cmd.Process.Pid, exited)
	if err != nil {
		cmd.Process.Kill()
		<-exited
		s.cmd, s.exited = nil, nil
		return fmt.Errorf("%w\n%s", err, tail(logfile))
	}
	return nil
}

// waitReady polls the server until the process with pid answers on
// s.port, the process exits, or ReadyTimeout passes.
func (s *Server) waitReady(pid int, exited <-chan struct{}) error {
	deadline := time.Now().Add(ReadyTimeout)
	want := "process_id:" + strconv.Itoa(pid)
	var last error
	for {
		select {
		case <-exited:
			return fmt.Errorf("redis-server on port %d exited at startup", s.port)
		default:
		}
		// INFO names the process that answered, so a server of another
		// test that took the port is not mistaken for this one.
		info, err := s.Do("INFO", "server")
		switch {
		case err != nil:
			last = err
		case !strings.Contains(info, want+"\r\n"):
			last = fmt.Errorf("another process answers on port %d", s.port)
		default:
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server on port %d not ready after %v: %v", s.port, ReadyTimeout, last)
		}
		time.Sleep(10 * time.Millisecond) // a poll interval, not an assertion
	}
}

// tail returns the end of a log file, for error messages.
func tail(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// Running reports whether the server process is running (paused counts
// as running).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Kill kills the server with SIGKILL, as a crash would, and waits until
// it has exited. Its data is lost.
func (s *Server) Kill() {
	s.t.Helper()
	if err := s.signalAndWait(syscall.SIGKILL); err != nil {
		s.t.Fatalf("redistest: kill: %v", err)
	}
}

// Stop shuts the server down with SIGTERM, as an operator would, and
// waits until it has exited. Its data is lost (nothing is saved).
func (s *Server) Stop() {
	s.t.Helper()
	if err := s.signalAndWait(syscall.SIGTERM); err != nil {
		s.t.Fatalf("redistest: stop: %v", err)
	}
}

// Pause stops the server process with SIGSTOP: connections stay open and
// new ones are accepted by the kernel, but nothing is answered, as with a
// hung server or a network that drops packets. Resume continues it.
func (s *Server) Pause() {
	s.t.Helper()
	if err := s.signal(syscall.SIGSTOP); err != nil {
		s.t.Fatalf("redistest: pause: %v", err)
	}
}

// Resume continues a server stopped by Pause.
func (s *Server) Resume() {
	s.t.Helper()
	if err := s.signal(syscall.SIGCONT); err != nil {
		s.t.Fatalf("redistest: resume: %v", err)
	}
}

// Restart starts the server again after Stop or Kill, on the same port
// and in the same directory, and waits until it answers. Cluster nodes
// rejoin their cluster from their saved cluster configuration.
func (s *Server) Restart() {
	s.t.Helper()
	deadline := time.Now().Add(ReadyTimeout)
	for {
		err := s.start()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redistest: restart on port %d: %v", s.port, err)
		}
		time.Sleep(50 * time.Millisecond) // the port may still be held; poll again
	}
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("not running")
	}
	return s.cmd.Process.Signal(sig)
}

func (s *Server) signalAndWait(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return errors.New("not running")
	}
	s.cmd.Process.Signal(syscall.SIGCONT) // a paused server cannot handle SIGTERM
	if err := s.cmd.Process.Signal(sig); err != nil {
		return err
	}
	select {
	case <-s.exited:
	case <-time.After(ReadyTimeout):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd, s.exited = nil, nil
	return nil
}

// cleanup kills the server if it is running.
func (s *Server) cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.cmd.Process.Kill()
		<-s.exited
		s.cmd, s.exited = nil, nil
	}
}

// FreePort returns a loopback TCP port that was free a moment ago, and
// never one it returned before in this process.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: find a free port: %v", err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		givenPorts.Lock()
		dup := givenPorts.ports[port]
		givenPorts.ports[port] = true
		givenPorts.Unlock()
		if !dup {
			return port
		}
	}
	t.Fatal("redistest: no loopback port not handed out before in 100 tries")
	return 0
}

// givenPorts holds the ports FreePort returned: the kernel may hand the
// port it just freed to the next bind, and a server's client and cluster
// bus ports must differ.
var givenPorts = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// Do sends one command to the server on a new connection, after AUTH if
// the server was started with --requirepass, and returns its reply as
// text: a simple string, bulk string or integer as it is, a nil reply as
// "", an array as its elements joined by newlines. An error reply is
// returned as an error. Do gives up after 5 seconds.
func (s *Server) Do(args ...string) (string, error) {
	cmds := [][]string{args}
	if p := s.password(); p != "" {
		cmds = [][]string{{"AUTH", p}, args}
	}
	replies, err := DoAll(s.Addr(), cmds...)
	if err != nil {
		return "", err
	}
	return replies[len(replies)-1], nil
}

// password returns the value of --requirepass in the server's arguments.
func (s *Server) password() string {
	for i := 0; i+1 < len(s.args); i++ {
		if s.args[i] == "--requirepass" {
			return s.args[i+1]
		}
	}
	return ""
}

// DoAll sends commands one after the other on one connection to the
// Redis server at addr, such as AUTH, SELECT, then a command for the
// selected database, and returns their replies as Server.Do does. It stops at
// the first error reply.
func DoAll(addr string, cmds ...[]string) ([]string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	var replies []string
	for _, args := range cmds {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := c.Write([]byte(b.String())); err != nil {
			return nil, err
		}
		reply, err := readReply(r)
		if err != nil {
			return nil, err
		}
		replies = append(replies, reply)
	}
	return replies, nil
}

// readReply reads one RESP2 reply.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("redistest: empty reply line")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("redistest: bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("redistest: bad array length %q", line)
		}
		parts := make([]string, 0, max(n, 0))
		for range n {
			p, err := readReply(r)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", fmt.Errorf("redistest: unexpected reply %q", line)
}
