// Command library is a small score-set API that uses floodgate as a
// library (package httplimit) for a limit only the application can key:
// each user may publish at most 20 score sets per hour, so that
// publications cannot saturate the background worker that processes them
// (MaveDB's "cap score set publications per hour").
//
//	go run ./examples/library -listen localhost:8080
//	curl -i -X POST -H 'X-User: alice' localhost:8080/score-sets/urn:mavedb:00000053-a-1/publish
//
// Authentication here is a pretend middleware that believes the X-User
// header, so that the example runs without an identity provider. A real
// application verifies a session or a token there and puts the user it
// proves in the request's context; the limit reads it from there and works
// the same.
//
// The quota is counted in this process's memory. Several replicas of an
// API, each with its own memory store, each admit the full quota: give
// them the Redis store (package ratelimit/redisstore) to share it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/floodgate/floodgate/httplimit"
	"github.com/floodgate/floodgate/ratelimit"
	"github.com/floodgate/floodgate/ratelimit/memory"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "library:", err)
		os.Exit(1)
	}
}

// run serves the API until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("library", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "localhost:8080", "`address` to listen on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	api, err := newAPI(memory.New(memory.Options{}), log)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Addr:              *listen,
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("listening", "addr", *listen)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Publications is the per-user publication quota.
var publications = ratelimit.Limit{Count: 20, Window: time.Hour}

// newAPI returns the API's handler, counting quotas in store.
func newAPI(store ratelimit.Store, log *slog.Logger) (http.Handler, error) {
	limiter, err := httplimit.New(store, httplimit.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	perUser, err := limiter.NewRule(httplimit.RuleSpec{
		Name:   "score-set-publications",
		Limits: []ratelimit.Limit{publications},
		Key:    httplimit.ByUser(userFrom),
	})
	if err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("POST /score-sets/{id}/publish", perUser.Wrap(http.HandlerFunc(publish)))
	mux.HandleFunc("GET /score-sets/{id}", getScoreSet)
	return authenticate(mux), nil
}

// publish stands for queueing a score set for publication. Only logged-in
// users may publish: an anonymous request passes the quota uncounted
// (it has no user to count) and is refused here.
func publish(w http.ResponseWriter, r *http.Request) {
	user, ok := userFrom(r.Context())
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="example"`)
		http.Error(w, "log in to publish", http.StatusUnauthorized)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"urn": r.PathValue("id"), "status": "publishing", "by": user})
}

func getScoreSet(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"urn": r.PathValue("id")})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type userKey struct{}

// userFrom returns the user that authenticate found.
func userFrom(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(userKey{}).(string)
	return u, ok
}

// authenticate is a PRETEND authentication middleware: it believes the
// X-User header. A real one verifies a session cookie or a bearer token
// and puts the user it proves in the context in the same way.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u := r.Header.Get("X-User"); u != "" {
			r = r.WithContext(context.WithValue(r.Context(), userKey{}, u))
		}
		next.ServeHTTP(w, r)
	})
}
