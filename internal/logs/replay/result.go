package replay

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
	"github.com/floodgate/floodgate/ratelimit"
)

// Result is what `floodgate replay --json` prints. The line counts and
// Files are the caller's to fill.
type Result struct {
	// Lines, Parsed and Unparsed count the non-empty lines of all files.
	Lines    int64 `json:"lines"`
	Parsed   int64 `json:"parsed"`
	Unparsed int64 `json:"unparsed"`
	// Requests is the number of request records replayed; Unrouted of
	// them matched no route, or had no HTTP request line, and met no
	// rule.
	Requests int64 `json:"requests"`
	Unrouted int64 `json:"unrouted"`
	// Clients is the number of distinct clients.
	Clients int `json:"clients"`
	// Mode is "log-only" or "enforce" (see the package comment).
	Mode string `json:"mode"`
	// From and To are the times of the first and last requests.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Order says how far from time order the requests reached the
	// engine.
	Order Order `json:"order"`
	// StoreEvictions counts counters the store dropped before they
	// expired because it was full; non-zero means some clients got their
	// limit afresh and the counts are low.
	StoreEvictions uint64 `json:"store_evictions"`
	// Files says what was read from each log.
	Files []logs.File `json:"files"`
	// Rules are the rules replayed, in evaluation order.
	Rules []Rule `json:"rules"`
	// Windows are the per-client peaks over the rules' windows, for
	// comparing thresholds with traffic (baseline's shape).
	Windows []baseline.Window `json:"windows"`
}

// Order says how far from time order the requests reached the engine
// (see the package comment). All zero: every request was replayed at its
// own time, in time order.
type Order struct {
	// Late counts requests older than the replay's clock when they were
	// replayed (read too far out of order to be put back in it): they
	// were replayed at the clock's instant. LateMaxSeconds is the most
	// one was older by.
	Late           int64   `json:"late"`
	LateMaxSeconds float64 `json:"late_max_seconds"`
	// LateReasons counts the late requests read by Replay.ReadFiles by
	// why they were (those given to Replay.Add out of order are late for
	// none of these).
	LateReasons LateReasons `json:"late_reasons"`
	// LeftOut counts records not replayed because they were dated more
	// than FarAhead after the records read before them in their file,
	// and a record after them came back more than FarAhead before them;
	// LeftOutMaxAheadSeconds is how far the furthest was ahead of the
	// record that came back.
	LeftOut                int64   `json:"left_out"`
	LeftOutMaxAheadSeconds float64 `json:"left_out_max_ahead_seconds"`
}

// LateReasons counts requests replayed late by the bound of ReadOrdered
// they were further out of order than (see Lateness).
type LateReasons struct {
	// Span: their line came more than ReorderSpan (of log time) after
	// those of later requests in their file.
	Span int64 `json:"span"`
	// Memory: the files open held all they may together (ExtraBytes)
	// before their line was read.
	Memory int64 `json:"memory"`
	// OpenFiles: their file waited to be opened while MaxOpen others
	// were open.
	OpenFiles int64 `json:"open_files"`
}

// add counts one request late for why; OnTime counts none.
func (l *LateReasons) add(why Lateness) {
	switch why {
	case LateSpan:
		l.Span++
	case LateMemory:
		l.Memory++
	case LateOpenFiles:
		l.OpenFiles++
	}
}

// Rule is what one rule did over the replay.
type Rule struct {
	// Name and Action are the rule's.
	Name   string `json:"name"`
	Action string `json:"action"`
	// Limit is the rule's limits as written, "100/5m", several joined by
	// " + "; "" for deny and allow rules.
	Limit string `json:"limit"`
	// Algorithm is the algorithm of the limits, "" without limits.
	Algorithm string `json:"algorithm,omitempty"`
	// Matched counts the requests the rule evaluated (its condition held).
	Matched int64 `json:"matched"`
	// WouldBlockRequests counts the requests it refused or would have:
	// over a limit, or denied.
	WouldBlockRequests int64 `json:"would_block_requests"`
	// WouldBlockClients counts the distinct clients of those requests;
	// WouldBlockBrowserClients the browser clients among them (a client's
	// class is that of most of its requests).
	WouldBlockClients        int `json:"would_block_clients"`
	WouldBlockBrowserClients int `json:"would_block_browser_clients"`
	// Errors counts evaluations that failed (a condition or key that
	// could not be evaluated): the rule was skipped, as the gateway does.
	Errors int64 `json:"errors"`
	// Cost and Charged are the rule's cost unit and what was charged in
	// it, for rules that count something other than requests.
	Cost    string  `json:"cost,omitempty"`
	Charged float64 `json:"charged,omitempty"`
	// Unmeasured: the cost is upstream_seconds and no request of the log
	// gave a duration (common and combined logs have none), so the
	// rule's cost could not be replayed; Charged is then 0 for want of
	// data, not because the upstream was idle.
	Unmeasured bool `json:"unmeasured,omitempty"`
	// NotReplayed, when set, says why the rule could not be replayed from
	// these logs and what would replay it: it applies only to requests
	// with a session, or of an API client, and no request of the logs
	// records one. Its counts are then 0 for want of data, not because it
	// would have refused nothing.
	NotReplayed string `json:"not_replayed,omitempty"`
	// Caveat, when set, says what the replay assumed for want of data:
	// the rule's condition reads the session or the API client, and no
	// request of the logs records one, so it was replayed as if no
	// request had one. Its counts may then be far from the gateway's.
	Caveat string `json:"caveat,omitempty"`
	// Candidates are the rule's candidate limits (shadow thresholds
	// counted on the same key next to the live one), with what each
	// would have blocked.
	Candidates []Candidate `json:"candidates,omitempty"`
	// Timeline has the same numbers per hour (UTC), for the hours in which
	// the rule matched a request, in order.
	Timeline []Hour `json:"timeline"`
	// Limits are the parsed limits, for reports.
	Limits []ratelimit.Limit `json:"-"`
}

// A Candidate is a rule's candidate limit and what it would have blocked.
type Candidate struct {
	// Limit is the candidate, "50/5m".
	Limit string `json:"limit"`
	// WouldBlockRequests, WouldBlockClients and WouldBlockBrowserClients
	// are as for Rule.
	WouldBlockRequests       int64 `json:"would_block_requests"`
	WouldBlockClients        int   `json:"would_block_clients"`
	WouldBlockBrowserClients int   `json:"would_block_browser_clients"`
}

// Hour is a rule's numbers in one hour.
type Hour struct {
	// Hour is the start of the hour, RFC 3339 in UTC.
	Hour string `json:"hour"`
	// Matched, WouldBlockRequests, WouldBlockClients and
	// WouldBlockBrowserClients are as for Rule, within the hour.
	Matched                  int64 `json:"matched"`
	WouldBlockRequests       int64 `json:"would_block_requests"`
	WouldBlockClients        int   `json:"would_block_clients"`
	WouldBlockBrowserClients int   `json:"would_block_browser_clients"`
}

// Why a rule was not replayed (Rule.NotReplayed).
const (
	NoSessions = "it counts requests by session, and the logs record no session: only floodgate's access log records one " +
		"(a keyed hash), for each request that had a valid session; replay such a log of traffic with sessions to replay this rule"
	NoAPIClients = "it counts only requests of a known API client, and the logs record no API client: only floodgate's access log " +
		"records one, for each request that had one; replay such a log of traffic with API clients to replay this rule"
)

// What a replay assumed of a rule (Rule.Caveat).
const (
	ReadsNoSession = "its condition reads session.*, and the logs record no session: it was replayed as if no request had one " +
		"(session.present and session.valid false); only floodgate's access log records sessions"
	ReadsNoAPIClient = "its condition reads api_client.*, and the logs record no API client: it was replayed as if no request had one " +
		"(api_client.id and api_client.plan empty); only floodgate's access log records API clients"
)

// Replayed reports whether any rule of r could be replayed.
func (r *Result) Replayed() bool {
	for _, rule := range r.Rules {
		if rule.NotReplayed == "" {
			return true
		}
	}
	return false
}

// Result computes the report. The Replay may not be added to after.
func (r *Replay) Result() *Result {
	res := &Result{Requests: r.base.Requests(), Unrouted: r.unrouted, Clients: r.base.Clients(),
		Mode: "enforce", StoreEvictions: r.store.Stats().Evictions, Rules: []Rule{}}
	if r.engine.LogOnly.Load() {
		res.Mode = "log-only"
	}
	res.Order = Order{Late: r.late, LateMaxSeconds: time.Duration(r.lateMax).Seconds(), LateReasons: r.lateWhy,
		LeftOut: r.leftOut.Records, LeftOutMaxAheadSeconds: r.leftOut.MaxAhead.Seconds()}
	if first, last, ok := r.base.Span(); ok {
		res.From, res.To = first.Format(time.RFC3339), last.Format(time.RFC3339)
	}
	for i, rule := range r.rules {
		st := &r.stats[i]
		out := Rule{Name: rule.Name, Action: rule.Action.String(), Limit: LimitString(rule.Limits),
			Matched: st.matched, WouldBlockRequests: st.wouldBlock, Errors: st.errors,
			Timeline: []Hour{}, Limits: rule.Limits}
		if len(rule.Limits) > 0 {
			out.Algorithm = rule.Limits[0].Algorithm.String()
		}
		out.WouldBlockClients, out.WouldBlockBrowserClients = r.count(st.clients)
		switch {
		case rule.NeedsSession() && r.sessions == 0:
			out.NotReplayed = NoSessions
		case rule.NeedsAPIClient() && r.apiCalls == 0:
			out.NotReplayed = NoAPIClients
		case rule.ReadsSession() && r.sessions == 0:
			out.Caveat = ReadsNoSession
		case rule.ReadsAPIClient() && r.apiCalls == 0:
			out.Caveat = ReadsNoAPIClient
		}
		if rule.Cost != "" && rule.Cost != config.CostRequests {
			out.Cost, out.Charged = rule.Cost, st.charged
			out.Unmeasured = rule.Cost == config.CostUpstreamSeconds && r.timed == 0
		}
		for ci, c := range st.candidates {
			cand := Candidate{Limit: rule.Candidates[ci].String(), WouldBlockRequests: c.wouldBlock}
			cand.WouldBlockClients, cand.WouldBlockBrowserClients = r.count(c.clients)
			out.Candidates = append(out.Candidates, cand)
		}
		hours := make([]int64, 0, len(st.hours))
		for h := range st.hours {
			hours = append(hours, h)
		}
		slices.Sort(hours)
		for _, h := range hours {
			hs := st.hours[h]
			hr := Hour{Hour: time.Unix(0, h*int64(time.Hour)).UTC().Format(time.RFC3339),
				Matched: hs.matched, WouldBlockRequests: hs.wouldBlock}
			hr.WouldBlockClients, hr.WouldBlockBrowserClients = r.count(hs.clients)
			out.Timeline = append(out.Timeline, hr)
		}
		res.Rules = append(res.Rules, out)
	}
	br := r.base.Result(baseline.ResultOptions{Top: -1})
	res.Windows = br.Windows
	slices.SortStableFunc(res.Windows, func(a, b baseline.Window) int {
		wa, _ := ratelimit.ParseWindow(a.Window)
		wb, _ := ratelimit.ParseWindow(b.Window)
		return cmp.Compare(wa, wb)
	})
	return res
}

func (r *Replay) count(set map[baseline.ClientID]struct{}) (clients, browsers int) {
	for id := range set {
		clients++
		if r.isBrowser(id) {
			browsers++
		}
	}
	return clients, browsers
}

// LimitString writes limits as a rule's limits are written: "100/5m",
// several joined by " + ".
func LimitString(limits []ratelimit.Limit) string {
	s := make([]string, len(limits))
	for i, l := range limits {
		s[i] = l.String()
	}
	return strings.Join(s, " + ")
}
