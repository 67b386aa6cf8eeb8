package admin

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/floodgate/floodgate/internal/telemetry"
)

// actionLog logs what is done through the admin API: every request an
// endpoint behind the token admitted ("admin action", INFO), and every
// one it refused ("admin request refused", WARN, rate-limited: a
// scanner's guesses cost a line per interval, each one counted). A line
// names the action, its outcome and the peer's class (loopback or
// remote), never the peer's address nor any credential.
type actionLog struct {
	log     *slog.Logger
	refused *telemetry.LogLimiter
}

func newActionLog(log *slog.Logger, o telemetry.LogLimiterOptions) *actionLog {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &actionLog{log: log, refused: telemetry.NewLogLimiter(log, o)}
}

// wrap logs each request h answers as action (what it does, such as
// "set mode"). h is the endpoint behind auth: a 401 or 403 is auth's
// refusal.
func (al *actionLog) wrap(action string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		aw := &actionWriter{ResponseWriter: w}
		h(aw, r)
		al.record(r, action, aw)
	}
}

func (al *actionLog) record(r *http.Request, action string, aw *actionWriter) {
	status := aw.status
	if status == 0 {
		status = http.StatusOK
	}
	peer := peerClass(r.RemoteAddr)
	if reason := aw.reason; reason != "" || status == http.StatusUnauthorized || status == http.StatusForbidden ||
		status == http.StatusTooManyRequests {
		switch {
		case reason != "":
		case status == http.StatusTooManyRequests:
			reason = reasonThrottled
		case status == http.StatusForbidden:
			reason = reasonForbidden
		case len(r.Header["Authorization"]) == 0:
			reason = reasonMissing
		default:
			reason = reasonWrong
		}
		al.refused.Log("admin\x1f"+action+"\x1f"+reason+"\x1f"+peer, slog.LevelWarn, "admin request refused",
			slog.String("action", action), slog.String("reason", reason),
			slog.Int("status", status), slog.String("peer", peer))
		return
	}
	outcome := "ok"
	switch {
	case status >= 500:
		outcome = "failed"
	case status >= 400:
		outcome = "rejected"
	}
	attrs := make([]slog.Attr, 0, 4+len(aw.notes))
	attrs = append(attrs, slog.String("action", action), slog.String("outcome", outcome),
		slog.Int("status", status), slog.String("peer", peer))
	attrs = append(attrs, aw.notes...)
	al.log.LogAttrs(context.Background(), slog.LevelInfo, "admin action", attrs...)
}

// peerClass names the peer at remote for the log: "loopback" or
// "remote", never its address.
func peerClass(remote string) string {
	if loopback(remote) {
		return "loopback"
	}
	return "remote"
}

// actionWriter records the status of an admin answer, and what the
// endpoint noted for the log (noteAction).
type actionWriter struct {
	http.ResponseWriter
	status int
	notes  []slog.Attr
	reason string // noteRefusal's
}

func (w *actionWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *actionWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *actionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Why the admin API refused a request, for its "admin request refused"
// line (docs/operations.md lists them).
const (
	reasonMissing     = "credentials missing" // no token, no sign-in
	reasonWrong       = "credentials wrong"   // a token that is not admin.token (header or sign-in form)
	reasonForbidden   = "forbidden"           // a remote peer while no token is set
	reasonHost        = "host not loopback"   // a loopback peer's request addressed to another name while no token is set (DNS rebinding)
	reasonCrossOrigin = "cross-origin"        // a browser request from another page (CSRF, Origin)
	reasonThrottled   = "throttled"           // a sign-in after too many wrong tokens
	reasonNoEndpoint  = "no such endpoint"    // a path under /admin/ that the API does not have
	reasonMethod      = "method not allowed"  // an endpoint asked with a method it does not answer
)

// noteRefusal says why the request w answers is refused, where its status
// alone does not tell (a wrong token in the sign-in form, a cross-origin
// browser request).
func noteRefusal(w http.ResponseWriter, reason string) {
	if aw, ok := w.(*actionWriter); ok {
		aw.reason = reason
	}
}

// noteAction adds attrs to the "admin action" line of the request w
// answers: what changed, from what to what. Values must be floodgate's
// own (a mode's name), never what the request sent.
func noteAction(w http.ResponseWriter, attrs ...slog.Attr) {
	if aw, ok := w.(*actionWriter); ok {
		aw.notes = append(aw.notes, attrs...)
	}
}
