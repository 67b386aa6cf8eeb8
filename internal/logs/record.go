// Package logs reads HTTP request logs for floodgate's tuning tools:
// nginx and Apache common and combined logs, Apache's vhost_combined
// logs, AWS Application Load Balancer access logs, AWS WAF JSON logs, and
// floodgate's own JSON logs (the access log of telemetry.AccessLog and
// the decision log). Input may
// be gzip-compressed (detected by its magic bytes) and the format is
// detected from the first lines unless given.
//
// A Reader yields one Record per parsed line. Lines that do not parse are
// counted and skipped, never fatal. The readers are the hot path of
// `floodgate baseline` and `floodgate replay`: they use no regular
// expressions, parse timestamps by hand, and reuse one buffer, so that
// reading a line allocates nothing.
//
// Packages below this one use the records: baseline (per-client peaks and
// suggested thresholds), replay (the rule engine over recorded traffic),
// query (saved queries over floodgate's own logs) and report (tables,
// JSON and HTML).
package logs

import (
	"time"

	"github.com/floodgate/floodgate/internal/uaclass"
)

// Kind says what a Record describes.
type Kind uint8

// Kinds.
const (
	// KindRequest is one HTTP request: a line of an access log (common,
	// combined, ALB, WAF, floodgate's access log).
	KindRequest Kind = iota
	// KindDecision is one rule decision of floodgate's decision log. One
	// request may have several, one per rule it matched; they carry the
	// hash of the rule's counter key rather than of the client, and no
	// User-Agent (only its class), so baseline and replay skip them.
	KindDecision
)

// A Record is one parsed log line. Its byte slices point into the Reader's
// buffers and are valid only until the next call to Reader.Next; copy what
// must be kept. Fields the format does not have are empty (zero).
type Record struct {
	// Kind says whether the record is a request or a rule decision.
	Kind Kind
	// Time is when the request arrived (common, combined, vhost_combined:
	// when it was received; ALB: request_creation_time, when the load
	// balancer received it; WAF: when the record was written; floodgate's
	// access log: when the request arrived, its decision log: when the
	// rule decided), in Unix nanoseconds.
	Time int64
	// Client identifies the client as the log gives it: an IP address
	// (ALB's port removed), a host name (common, combined and
	// vhost_combined logs of servers that resolve names), or a keyed hash (floodgate's logs; see
	// ClientHashed).
	Client []byte
	// ClientHashed reports that Client is a keyed hash, not an address.
	ClientHashed bool
	// Method is the request method as logged, such as "GET"; empty when
	// the request line was malformed.
	Method []byte
	// Target is the request target as logged: path and query, still
	// percent-encoded ("/a%20b?q=1"); empty when the request line was
	// malformed. floodgate's logs give the cleaned, decoded path, without
	// the query; PathDecoded says so.
	Target []byte
	// PathDecoded reports that Target is the path the gateway's rules saw:
	// decoded and cleaned, without the query, so a "%" or "?" in it is
	// part of the path (floodgate's logs).
	PathDecoded bool
	// Host is the requested host when the log has it (ALB, WAF), or the
	// virtual host that served the request (vhost_combined); without
	// port.
	Host []byte
	// UserAgent is the User-Agent, empty when none was sent.
	UserAgent []byte
	// HasUserAgent reports that the format records User-Agents.
	HasUserAgent bool
	// Class is the client class when the log records it (floodgate's
	// logs: ua_class); Unknown otherwise.
	Class uaclass.Class
	// Status is the response status, 0 when unknown.
	Status int
	// Bytes is the response size in bytes, -1 when unknown.
	Bytes int64
	// Duration is how long the upstream took (ALB's
	// target_processing_time) or the whole request (floodgate's
	// duration_ms); 0 when the log does not say.
	Duration time.Duration
	// Route is the route name (floodgate's logs).
	Route []byte
	// Session is the keyed hash of the request's verified session, empty
	// when it had none; APIClient the id of its known API client, empty
	// when none (floodgate's access log; no other log records them).
	Session, APIClient []byte
	// Rule and Decision are the rule and its decision ("blocked",
	// "unavailable", "would_block", "denied", "allowed") of a
	// KindDecision record.
	Rule, Decision []byte
	// BlockedBy is the rule that answered the request itself (floodgate's
	// access log; a WAF log's rate-based rule), or empty.
	BlockedBy []byte
	// Internal reports a request the gateway took on its internal
	// listener (floodgate's access log: "listener":"internal"), which it
	// forwards uncounted unless internal.evaluate_rules.
	Internal bool
	// ForProxy reports a request the gateway decided for a proxy on its
	// decision listener (floodgate's logs: "listener":"decide"): the
	// status, size and duration are the decision's, and the rules that
	// need the response were not applied.
	ForProxy bool
	// NoUpstreamAnswer reports that the upstream did not answer: the
	// status is the load balancer's own (ALB: target_status_code "-": a
	// target that failed or timed out, a redirect or fixed response).
	NoUpstreamAnswer bool
	// WouldBlock are the rules that would have refused the request
	// without answering it: count rules over their limit, and every rule
	// in log-only mode (floodgate's access log).
	WouldBlock [][]byte
}

// At returns Time as a time.Time in UTC.
func (r *Record) At() time.Time { return time.Unix(0, r.Time).UTC() }

func (r *Record) reset() {
	wb := r.WouldBlock[:0]
	*r = Record{Bytes: -1, WouldBlock: wb}
}
