// Package query holds the saved queries over floodgate's own logs,
// the questions MaveDB kept as Logs Insights queries:
//
//   - LimitedClients: which clients were rate-limited, how often, by
//     which rules;
//   - BrowsersCaught: browser traffic caught by a rate rule, per rule;
//   - PeakRate: each client's peak request rate (package baseline).
//
// They read floodgate's access log (telemetry.AccessLog: one record per
// request, with the hashed client, the User-Agent class and the rules
// that blocked or would have blocked it) and its decision log (one record
// per rule decision, keyed by the hash of the rule's counter key, with the
// User-Agent class). Where a stream holds both, the access records answer
// and the decision records, which describe the same requests again, are
// only counted. The decision log alone answers per rule counter key (one
// client under two rules has two keys). Other formats work where they
// carry the answer: a 429 in a common, combined or ALB log counts as
// limited by an unnamed rule, "(429)". In floodgate's access log only
// blocked_by says floodgate refused: a 429 without it is the upstream's.
package query

import (
	"bytes"
	"cmp"
	"slices"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/internal/uaclass"
)

// Status429 names the rule of a request answered 429 in a log that does
// not name rules.
const Status429 = "(429)"

// Summary is what every query reports about its input. The line counts
// and Files are the caller's to fill.
type Summary struct {
	// Query names the query: "limited-clients", "browsers-caught" or
	// "peak-rate".
	Query string `json:"query"`
	// Lines, Parsed and Unparsed count the non-empty lines of all files.
	Lines    int64 `json:"lines"`
	Parsed   int64 `json:"parsed"`
	Unparsed int64 `json:"unparsed"`
	// Files says what was read from each log.
	Files []logs.File `json:"files"`
	// Requests and Decisions count access-log (request) records and
	// decision-log records.
	Requests  int64 `json:"requests"`
	Decisions int64 `json:"decisions"`
	// Notes say what the input could not answer.
	Notes []string `json:"notes,omitempty"`
}

// A LimitedClient is a client that a rule refused, or would have.
type LimitedClient struct {
	// Client is the client as the report's Namer shows it: a keyed hash
	// of the address (unless shown as logged), the hashed client of
	// floodgate's access log, or the hashed counter key of one rule
	// (decision log: the same client has one per rule).
	Client string `json:"client"`
	// Class is the client's User-Agent class, "unknown" in decision logs.
	Class string `json:"class"`
	// Requests counts the client's records.
	Requests int64 `json:"requests"`
	// Blocked counts requests a rule answered itself (429, 403);
	// WouldBlock requests rules would have refused (count rules,
	// log-only mode).
	Blocked    int64 `json:"blocked"`
	WouldBlock int64 `json:"would_block"`
	// Rules names the rules involved, sorted.
	Rules []string `json:"rules"`
	// First and Last are the times of its first and last limited
	// requests, RFC 3339.
	First string `json:"first"`
	Last  string `json:"last"`
}

// LimitedClientsResult is the answer of LimitedClients.
type LimitedClientsResult struct {
	Summary
	// Limited counts the limited clients; Clients lists the first of
	// them, most limited first (as many as asked).
	Limited int             `json:"limited"`
	Clients []LimitedClient `json:"clients"`
}

// LimitedClients collects the clients that were limited. Add every
// record, then call Result.
//
// When the logs hold access records, they answer alone: decision records
// describe the same requests again. Without access records, the clients
// are the decision log's counter keys, one per rule and client.
type LimitedClients struct {
	sum     Summary
	clients map[string]*limitedState // from access records
	keys    map[string]*limitedState // from decision records
}

type limitedState struct {
	LimitedClient
	hashed      bool // the log gives the client hashed
	classes     [uaclass.NumClasses]int64
	rules       map[string]bool
	first, last int64
	limited     bool
}

// NewLimitedClients returns an empty query.
func NewLimitedClients() *LimitedClients {
	return &LimitedClients{sum: Summary{Query: "limited-clients"}, clients: map[string]*limitedState{}, keys: map[string]*limitedState{}}
}

// Add counts one record.
func (q *LimitedClients) Add(rec *logs.Record) {
	if rec.Kind == logs.KindDecision {
		q.sum.Decisions++
	} else {
		q.sum.Requests++
	}
	if len(rec.Client) == 0 {
		return
	}
	m := q.clients
	if rec.Kind == logs.KindDecision {
		m = q.keys
	}
	st := m[string(rec.Client)]
	if st == nil {
		st = &limitedState{LimitedClient: LimitedClient{Client: string(rec.Client)}, hashed: rec.ClientHashed, rules: map[string]bool{}}
		m[st.Client] = st
	}
	st.Requests++
	st.classes[classOf(rec)]++
	blocked, would := false, false
	switch rec.Kind {
	case logs.KindDecision:
		switch string(rec.Decision) {
		case "blocked", "denied", "unavailable":
			blocked = true
		case "would_block":
			would = true
		}
		if blocked || would {
			st.rules[string(rec.Rule)] = true
		}
	default:
		if len(rec.BlockedBy) > 0 {
			blocked = true
			st.rules[string(rec.BlockedBy)] = true
		} else if unnamed429(rec) {
			blocked = true
			st.rules[Status429] = true
		}
		for _, r := range rec.WouldBlock {
			would = true
			st.rules[string(r)] = true
		}
	}
	if !blocked && !would {
		return
	}
	if blocked {
		st.Blocked++
	} else {
		st.WouldBlock++
	}
	if !st.limited || rec.Time < st.first {
		st.first = rec.Time
	}
	if !st.limited || rec.Time > st.last {
		st.last = rec.Time
	}
	st.limited = true
}

// Result returns the limited clients, most limited first (then by
// requests, then by name), at most top of them (none if top is 0, all if
// it is negative), shown by namer: an address as a keyed hash unless
// namer.Show, as every report shows clients.
func (q *LimitedClients) Result(top int, namer baseline.Namer) *LimitedClientsResult {
	res := &LimitedClientsResult{Summary: q.sum, Clients: []LimitedClient{}}
	m := q.clients
	if q.sum.Requests == 0 && q.sum.Decisions > 0 {
		m = q.keys
		res.Notes = append(res.Notes, "from the decision log: a client is a rule's counter key, so one address under several rules is listed once per rule")
	}
	for _, st := range m {
		if !st.limited {
			continue
		}
		c := st.LimitedClient
		c.Class = majority(st.classes).String()
		for r := range st.rules {
			c.Rules = append(c.Rules, r)
		}
		slices.Sort(c.Rules)
		c.First, c.Last = formatTime(st.first), formatTime(st.last)
		res.Clients = append(res.Clients, c)
	}
	slices.SortFunc(res.Clients, func(a, b LimitedClient) int {
		return cmp.Or(-cmp.Compare(a.Blocked+a.WouldBlock, b.Blocked+b.WouldBlock),
			-cmp.Compare(a.Requests, b.Requests), cmp.Compare(a.Client, b.Client))
	})
	res.Limited = len(res.Clients)
	if top >= 0 && len(res.Clients) > top {
		res.Clients = res.Clients[:top]
	}
	// Named after sorting, so that ties keep the order of the clients as
	// logged rather than of their hashes, whose key may be drawn per run.
	for i := range res.Clients {
		res.Clients[i].Client = namer.Name(res.Clients[i].Client, m[res.Clients[i].Client].hashed)
	}
	if q.sum.Requests == 0 && q.sum.Decisions == 0 {
		res.Notes = append(res.Notes, "no records")
	}
	return res
}

// A CaughtRule is the browser traffic one rule caught.
type CaughtRule struct {
	// Rule is the rule's name, or Status429.
	Rule string `json:"rule"`
	// Requests counts browser requests the rule refused or would have;
	// Blocked and WouldBlock split them.
	Requests   int64 `json:"requests"`
	Blocked    int64 `json:"blocked"`
	WouldBlock int64 `json:"would_block"`
	// Clients counts the distinct browser clients among them.
	Clients int `json:"clients"`
	// TopPaths are the paths most caught, at most five.
	TopPaths []PathCount `json:"top_paths"`
	// First and Last are the times of the first and last caught
	// requests, RFC 3339.
	First string `json:"first"`
	Last  string `json:"last"`
}

// PathCount is a path and how many caught requests it had.
type PathCount struct {
	Path     string `json:"path"`     // the request path
	Requests int64  `json:"requests"` // caught requests to it
}

// BrowsersCaughtResult is the answer of BrowsersCaught.
type BrowsersCaughtResult struct {
	Summary
	// BrowserRequests counts every request from a browser, caught or
	// not, to put Requests in proportion; nil (null) when the input
	// cannot say: a decision log records only the requests some rule
	// decided on.
	BrowserRequests *int64 `json:"browser_requests"`
	// Rules are the rules that caught some, most first.
	Rules []CaughtRule `json:"rules"`
}

// BrowsersCaught collects browser requests caught by rate rules.
type BrowsersCaught struct {
	sum      Summary
	browsers int64
	rules    map[string]*caughtState // from access records
	byKey    map[string]*caughtState // from decision records
}

type caughtState struct {
	CaughtRule
	clients     map[string]bool
	paths       map[string]int64
	first, last int64
}

// NewBrowsersCaught returns an empty query.
func NewBrowsersCaught() *BrowsersCaught {
	return &BrowsersCaught{sum: Summary{Query: "browsers-caught"}, rules: map[string]*caughtState{}, byKey: map[string]*caughtState{}}
}

// Add counts one record.
func (q *BrowsersCaught) Add(rec *logs.Record) {
	if rec.Kind == logs.KindDecision {
		q.sum.Decisions++
		if classOf(rec) != uaclass.Browser {
			return
		}
		switch string(rec.Decision) {
		case "blocked", "denied", "unavailable":
			q.caught(q.byKey, string(rec.Rule), rec, true)
		case "would_block":
			q.caught(q.byKey, string(rec.Rule), rec, false)
		}
		return
	}
	q.sum.Requests++
	if classOf(rec) != uaclass.Browser {
		return
	}
	q.browsers++
	if len(rec.BlockedBy) > 0 {
		q.caught(q.rules, string(rec.BlockedBy), rec, true)
	} else if unnamed429(rec) {
		q.caught(q.rules, Status429, rec, true)
	}
	for _, r := range rec.WouldBlock {
		q.caught(q.rules, string(r), rec, false)
	}
}

func (q *BrowsersCaught) caught(m map[string]*caughtState, rule string, rec *logs.Record, blocked bool) {
	st := m[rule]
	if st == nil {
		st = &caughtState{CaughtRule: CaughtRule{Rule: rule}, clients: map[string]bool{}, paths: map[string]int64{},
			first: rec.Time, last: rec.Time}
		m[rule] = st
	}
	st.Requests++
	if blocked {
		st.Blocked++
	} else {
		st.WouldBlock++
	}
	st.clients[string(rec.Client)] = true
	// The path, without the query: requests that differ in it only are one
	// path, and what it holds (search terms, tokens in URLs) is not shown.
	// floodgate's access log records the path alone, where a "?" belongs
	// to the path.
	path := rec.Target
	if i := bytes.IndexByte(path, '?'); i >= 0 && !rec.PathDecoded {
		path = path[:i]
	}
	if len(st.paths) < 100000 || st.paths[string(path)] > 0 {
		st.paths[string(path)]++
	}
	st.first, st.last = min(st.first, rec.Time), max(st.last, rec.Time)
}

// Result returns the rules that caught browser traffic, most first.
func (q *BrowsersCaught) Result() *BrowsersCaughtResult {
	browsers := q.browsers
	res := &BrowsersCaughtResult{Summary: q.sum, BrowserRequests: &browsers, Rules: []CaughtRule{}}
	m := q.rules
	if q.sum.Requests == 0 && q.sum.Decisions > 0 {
		m = q.byKey
		res.BrowserRequests = nil
		res.Notes = append(res.Notes, "from the decision log: clients are rule counter keys, and how many requests came from browsers in all (browser_requests) is not known")
	}
	for _, st := range m {
		c := st.CaughtRule
		c.Clients = len(st.clients)
		c.First, c.Last = formatTime(st.first), formatTime(st.last)
		for p, n := range st.paths {
			c.TopPaths = append(c.TopPaths, PathCount{Path: p, Requests: n})
		}
		slices.SortFunc(c.TopPaths, func(a, b PathCount) int {
			return cmp.Or(-cmp.Compare(a.Requests, b.Requests), cmp.Compare(a.Path, b.Path))
		})
		c.TopPaths = c.TopPaths[:min(5, len(c.TopPaths))]
		res.Rules = append(res.Rules, c)
	}
	slices.SortFunc(res.Rules, func(a, b CaughtRule) int {
		return cmp.Or(-cmp.Compare(a.Requests, b.Requests), cmp.Compare(a.Rule, b.Rule))
	})
	if q.sum.Requests > 0 && q.browsers == 0 {
		res.Notes = append(res.Notes, "no request came from a browser (or the log records no User-Agent)")
	}
	return res
}

// unnamed429 reports whether rec is a request answered 429 by a rule the
// log does not name (Status429): a 429 of a log that does not say who
// refused (common, combined, ALB; WAF outside rate-based rules). In
// floodgate's access log blocked_by says when floodgate refused, and
// a 429 without it is the upstream's own answer, forwarded. Only
// floodgate's logs give clients hashed, which tells its records apart.
func unnamed429(rec *logs.Record) bool {
	return rec.Status == 429 && len(rec.WouldBlock) == 0 && !rec.ClientHashed
}

// classOf is a record's class: the log's, or its User-Agent's.
func classOf(rec *logs.Record) uaclass.Class {
	if rec.Class != uaclass.Unknown || !rec.HasUserAgent {
		return rec.Class
	}
	return uaclass.ClassifyBytes(rec.UserAgent)
}

// majority is the class of most requests, Unknown aside; ties go to
// browser, then crawler, then script.
func majority(n [uaclass.NumClasses]int64) uaclass.Class {
	best, bestN := uaclass.Unknown, int64(0)
	for _, c := range []uaclass.Class{uaclass.Browser, uaclass.Crawler, uaclass.Script} {
		if n[c] > bestN {
			best, bestN = c, n[c]
		}
	}
	return best
}

func formatTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }
