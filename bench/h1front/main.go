// Command h1front is a measurement aid: floodgate's real gateway
// (gateway.New on a configuration file: routes, rules, store, metrics,
// forwarder) behind a minimal keep-alive HTTP/1.1 loop that reads GET
// requests without bodies into a reused http.Request and writes each
// response in one flush. It does none of what makes a server safe on the
// internet (no request bodies, no limits beyond a 64 KiB head, no
// timeouts, no pipelining checks, no chunked requests): it is not a server
// to run. It measured what a leaner public side than net/http's server
// would give, which became internal/h1server; now it shows what
// h1server's parsing and safety cost against no server at all.
// bench/gateway.sh runs it as the h1front target.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strconv"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/gateway"
	"github.com/floodgate/floodgate/internal/telemetry"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:18086", "listen address")
	file := flag.String("config", "bench/mavedb-bench.yaml", "floodgate configuration")
	flag.Parse()
	f, err := config.Load(*file, "", os.LookupEnv)
	if err != nil {
		log.Fatalf("h1front: %v", err)
	}
	f.Config.ApplyDefaults()
	m := telemetry.NewMetrics("bench")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, closer, err := gateway.NewStore(&f.Config.Store, m, logger)
	if err != nil {
		log.Fatalf("h1front: %v", err)
	}
	defer closer.Close()
	g, problems := gateway.New(f, gateway.Options{Store: store, Metrics: m, Logger: logger})
	if len(problems) > 0 {
		log.Fatalf("h1front: %v", problems)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatalf("h1front: %v", err)
	}
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatalf("h1front: %v", err)
		}
		go serveConn(c, g)
	}
}

// names caches canonical header names, so that common ones cost no
// allocation.
type names map[string]string

func (n names) canonical(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	s := textproto.CanonicalMIMEHeaderKey(string(b))
	if len(n) < 256 {
		n[string(b)] = s
	}
	return s
}

func serveConn(c net.Conn, h http.Handler) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 16<<10)
	bw := bufio.NewWriterSize(c, 16<<10)
	nm := names{}
	ctx := context.Background()
	req := (&http.Request{ProtoMajor: 1, ProtoMinor: 1, Proto: "HTTP/1.1", Header: http.Header{}, Body: http.NoBody,
		RemoteAddr: c.RemoteAddr().String(), URL: &url.URL{}}).WithContext(ctx)
	w := &writer{bw: bw, header: http.Header{}}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		method, rest, ok1 := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" "))
		target, proto, ok2 := bytes.Cut(rest, []byte(" "))
		if !ok1 || !ok2 || !bytes.HasPrefix(proto, []byte("HTTP/1.")) {
			return
		}
		clear(req.Header)
		for {
			l, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			l = bytes.TrimRight(l, "\r\n")
			if len(l) == 0 {
				break
			}
			k, v, ok := bytes.Cut(l, []byte(":"))
			if !ok {
				return
			}
			name := nm.canonical(k)
			req.Header[name] = append(req.Header[name], string(bytes.TrimSpace(v)))
		}
		if req.Method != string(method) {
			req.Method = string(method)
		}
		u, err := url.ParseRequestURI(string(target))
		if err != nil {
			return
		}
		*req.URL = *u
		req.RequestURI = u.RequestURI()
		req.Host = req.Header.Get("Host")
		clear(w.header)
		w.code, w.body = 0, w.body[:0]
		h.ServeHTTP(w, req)
		if err := w.finish(); err != nil {
			return
		}
	}
}

// writer buffers one response and writes it with a Content-Length.
type writer struct {
	bw     *bufio.Writer
	header http.Header
	code   int
	body   []byte
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(code int) {
	if w.code == 0 && code >= 200 {
		w.code = code
	}
}

func (w *writer) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	w.body = append(w.body, b...)
	return len(b), nil
}

func (w *writer) Flush() {}

func (w *writer) finish() error {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	bw := w.bw
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(w.code))
	bw.WriteString(" ")
	bw.WriteString(http.StatusText(w.code))
	bw.WriteString("\r\n")
	w.header.Del("Content-Length")
	for k, vs := range w.header {
		for _, v := range vs {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("Content-Length: ")
	bw.WriteString(strconv.Itoa(len(w.body)))
	bw.WriteString("\r\n\r\n")
	bw.Write(w.body)
	if err := bw.Flush(); err != nil {
		return errors.New("write")
	}
	return nil
}
