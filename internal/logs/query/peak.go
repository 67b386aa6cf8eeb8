package query

import (
	"math"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/logs/baseline"
)

// PeakRateResult is the answer of PeakRate.
type PeakRateResult struct {
	Summary
	// Clients counts the distinct clients measured.
	Clients int `json:"clients"`
	// Windows are the percentiles of per-client peaks, as `floodgate
	// baseline` reports them (without the distribution).
	Windows []baseline.Window `json:"windows"`
	// TopClients are the clients with the highest peaks.
	TopClients []baseline.TopClient `json:"top_clients"`
}

// PeakRate measures each client's peak number of requests in one aligned
// window. Access-log records are measured by hashed client. A log of
// decisions only is measured by rule and counter key ("rule:hash"), which
// counts only the decisions the log holds: set log.decisions to all for
// every one.
type PeakRate struct {
	sum       Summary
	requests  *baseline.Baseline
	decisions *baseline.Baseline
	rec       logs.Record
	key       []byte
}

// NewPeakRate returns a query over windows (baseline.DefaultWindows if
// none).
func NewPeakRate(windows []time.Duration) *PeakRate {
	return &PeakRate{sum: Summary{Query: "peak-rate"}, requests: baseline.New(windows), decisions: baseline.New(windows)}
}

// Add counts one record.
func (q *PeakRate) Add(rec *logs.Record) {
	if rec.Kind != logs.KindDecision {
		q.sum.Requests++
		q.requests.Add(rec)
		return
	}
	q.sum.Decisions++
	if len(rec.Client) == 0 {
		return // deny and allow decisions have no key
	}
	q.key = append(append(append(q.key[:0], rec.Rule...), ':'), rec.Client...)
	// The decision log has no User-Agent but its class (ua_class), which
	// classes the key's requests as the access log's records are.
	q.rec = logs.Record{Kind: logs.KindRequest, Time: rec.Time, Client: q.key, ClientHashed: true, Class: rec.Class}
	q.decisions.Add(&q.rec)
}

// Result returns the peaks and the clients with the highest peaks, at
// most top of them (none if top is 0, all if it is negative).
func (q *PeakRate) Result(top int, namer baseline.Namer) *PeakRateResult {
	switch {
	case top == 0:
		top = -1 // baseline's none
	case top < 0:
		top = math.MaxInt
	}
	b := q.requests
	res := &PeakRateResult{Summary: q.sum}
	if q.sum.Requests == 0 && q.sum.Decisions > 0 {
		b = q.decisions
		res.Notes = append(res.Notes, "measured from decision records, by rule and counter key: only the decisions the log holds count (log.decisions: all logs every one)")
	}
	br := b.Result(baseline.ResultOptions{Top: top, Namer: namer})
	res.Clients = br.Clients
	res.Windows = br.Windows
	for i := range res.Windows {
		res.Windows[i].Distribution = nil
	}
	res.TopClients = br.TopClients
	return res
}
