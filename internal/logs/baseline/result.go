package baseline

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
	"github.com/floodgate/floodgate/internal/uaclass"
)

// Result is what `floodgate baseline --json` prints. The line counts are
// the caller's to fill (the Baseline sees records, not lines).
type Result struct {
	// Lines, Parsed and Unparsed count the non-empty lines of all files.
	Lines    int64 `json:"lines"`
	Parsed   int64 `json:"parsed"`
	Unparsed int64 `json:"unparsed"`
	// Requests is the number of request records measured (decision-log
	// records are parsed but not requests).
	Requests int64 `json:"requests"`
	// Clients is the number of distinct clients.
	Clients int `json:"clients"`
	// From and To are the times of the first and last requests, RFC 3339
	// in UTC; empty when there were none.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Files says what was read from each log.
	Files []logs.File `json:"files"`
	// Windows are the per-client peaks over each window, in the order
	// given.
	Windows []Window `json:"windows"`
	// TopClients are the busiest clients.
	TopClients []TopClient `json:"top_clients"`
	// Suggestions are candidate thresholds, by window, ascending.
	Suggestions []Suggestion `json:"suggestions"`
}

// Peaks are percentiles of per-client peaks (nearest rank: the p-th
// percentile is the smallest peak that at least p% of clients do not
// exceed).
type Peaks struct {
	PeakMax  int64 `json:"peak_max"`  // the busiest client's peak
	PeakP50  int64 `json:"peak_p50"`  // median
	PeakP90  int64 `json:"peak_p90"`  // 90th percentile
	PeakP99  int64 `json:"peak_p99"`  // 99th percentile
	PeakP999 int64 `json:"peak_p999"` // 99.9th percentile
}

// Window is the distribution of per-client peaks over one window length.
type Window struct {
	// Window is the window length, such as "1m".
	Window string `json:"window"`
	Peaks
	// ByClass has the same percentiles per client class ("browser",
	// "script", "crawler", "unknown" when the log has no User-Agent),
	// for the classes that have clients.
	ByClass map[string]ClassPeaks `json:"by_class"`
	// Distribution counts the clients at each peak, ascending, for
	// charts.
	Distribution []Bin `json:"distribution,omitempty"`
}

// ClassPeaks are the peaks of one class of clients.
type ClassPeaks struct {
	Clients int `json:"clients"` // clients of the class
	Peaks
}

// A Bin is the number of clients whose peak is Peak.
type Bin struct {
	Peak           int64 `json:"peak"`            // a peak value
	Clients        int   `json:"clients"`         // clients whose peak it is
	BrowserClients int   `json:"browser_clients"` // browser clients among them
}

// TopClient is one of the busiest clients.
type TopClient struct {
	// Client is the client's keyed hash, or its address with
	// --show-clients.
	Client string `json:"client"`
	// Class is the client's class (see Baseline.Class).
	Class string `json:"class"`
	// Requests counts all its requests.
	Requests int64 `json:"requests"`
	// Peaks maps each window ("1m") to the client's peak in it.
	Peaks map[string]int64 `json:"peaks"`
}

// A Suggestion is a candidate threshold with what it would have blocked
// (fixed-window arithmetic; see the package comment).
type Suggestion struct {
	// Window and Threshold are the suggested limit: Threshold/Window.
	Window    string `json:"window"`
	Threshold int64  `json:"threshold"`
	// Basis says where the number comes from, such as "busiest browser
	// client" or "p99.9 of clients", rounded up to a round number.
	Basis string `json:"basis"`
	// WouldBlockRequests, WouldBlockClients and WouldBlockBrowserClients
	// are the requests it would have refused, their distinct clients, and
	// the browser clients among those.
	WouldBlockRequests       int64 `json:"would_block_requests"`
	WouldBlockClients        int   `json:"would_block_clients"`
	WouldBlockBrowserClients int   `json:"would_block_browser_clients"`
}

// ResultOptions shape a Result.
type ResultOptions struct {
	// Top is how many of the busiest clients to list (by peak in the
	// first window, then by requests). Default 10; negative for none.
	Top int
	// Namer shows clients (hashed by default).
	Namer Namer
}

// Result computes the report. The Baseline may not be added to after.
func (b *Baseline) Result(o ResultOptions) *Result {
	r := &Result{Requests: b.requests, Clients: len(b.cl.names),
		Windows: []Window{}, TopClients: []TopClient{}, Suggestions: []Suggestion{}}
	if first, last, ok := b.Span(); ok {
		r.From, r.To = first.Format(time.RFC3339), last.Format(time.RFC3339)
	}
	classes := make([]uaclass.Class, len(b.cl.names))
	for id := range classes {
		classes[id] = b.cl.class(ClientID(id))
	}
	allPeaks := make([][]uint32, len(b.windows))
	for wi, width := range b.windows {
		peaks := b.Peaks(wi)
		allPeaks[wi] = peaks
		w := Window{Window: FormatWindow(time.Duration(width)), ByClass: map[string]ClassPeaks{}}
		w.Peaks = percentiles(peaks)
		var byClass [uaclass.NumClasses][]uint32
		for id, p := range peaks {
			byClass[classes[id]] = append(byClass[classes[id]], p)
		}
		for c, ps := range byClass {
			if len(ps) > 0 {
				w.ByClass[uaclass.Class(c).String()] = ClassPeaks{Clients: len(ps), Peaks: percentiles(ps)}
			}
		}
		w.Distribution = distribution(peaks, classes)
		r.Windows = append(r.Windows, w)
		r.Suggestions = append(r.Suggestions, b.suggest(wi, w)...)
	}
	r.TopClients = b.top(o, allPeaks, classes)
	return r
}

// percentiles returns the nearest-rank percentiles of peaks (which it
// sorts a copy of).
func percentiles(peaks []uint32) Peaks {
	if len(peaks) == 0 {
		return Peaks{}
	}
	s := slices.Clone(peaks)
	slices.Sort(s)
	// The nearest rank of per-mille p among n is ⌈p·n/1000⌉, in integers.
	rank := func(perMille int) int64 {
		i := (perMille*len(s)+999)/1000 - 1
		return int64(s[max(0, min(i, len(s)-1))])
	}
	return Peaks{PeakMax: int64(s[len(s)-1]), PeakP50: rank(500), PeakP90: rank(900), PeakP99: rank(990), PeakP999: rank(999)}
}

func distribution(peaks []uint32, classes []uaclass.Class) []Bin {
	all := map[uint32]*Bin{}
	for id, p := range peaks {
		bin := all[p]
		if bin == nil {
			bin = &Bin{Peak: int64(p)}
			all[p] = bin
		}
		bin.Clients++
		if classes[id] == uaclass.Browser {
			bin.BrowserClients++
		}
	}
	out := make([]Bin, 0, len(all))
	for _, bin := range all {
		out = append(out, *bin)
	}
	slices.SortFunc(out, func(a, b Bin) int { return cmp.Compare(a.Peak, b.Peak) })
	return out
}

// suggest proposes thresholds for one window: above the busiest browser
// client (and twice that, for headroom) when the log tells browsers
// apart, and at the 99th and 99.9th percentiles of all clients; each
// rounded up to a round number.
func (b *Baseline) suggest(wi int, w Window) []Suggestion {
	type cand struct {
		t     int64
		basis string
	}
	var cands []cand
	if bp, ok := w.ByClass[uaclass.Browser.String()]; ok {
		cands = append(cands,
			cand{RoundUp(bp.PeakMax), "busiest browser client"},
			cand{RoundUp(2 * bp.PeakMax), "twice the busiest browser client"})
	} else {
		cands = append(cands, cand{RoundUp(w.PeakP90), "p90 of clients"}, cand{RoundUp(w.PeakMax), "busiest client"})
	}
	cands = append(cands, cand{RoundUp(w.PeakP99), "p99 of clients"}, cand{RoundUp(w.PeakP999), "p99.9 of clients"})
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(a.t, b.t) })
	var out []Suggestion
	for _, c := range cands {
		if c.t < 1 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Threshold == c.t {
			out[n-1].Basis += "; " + c.basis
			continue
		}
		req, cl, br := b.WouldBlock(wi, c.t)
		out = append(out, Suggestion{Window: w.Window, Threshold: c.t, Basis: c.basis,
			WouldBlockRequests: req, WouldBlockClients: cl, WouldBlockBrowserClients: br})
	}
	return out
}

// RoundUp rounds n up to a round number: n itself up to 10, then the
// next of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 and 8 times a power of ten (108
// → 120, 739 → 800, 1234 → 1500).
func RoundUp(n int64) int64 {
	if n <= 10 {
		return n
	}
	steps := [...]int64{10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100}
	scale := int64(1)
	for n > 100*scale && scale < math.MaxInt64/1000 {
		scale *= 10
	}
	for _, s := range steps {
		if s*scale >= n {
			return s * scale
		}
	}
	return n
}

func (b *Baseline) top(o ResultOptions, peaks [][]uint32, classes []uaclass.Class) []TopClient {
	n := o.Top
	if n == 0 {
		n = 10
	}
	out := []TopClient{}
	if n < 0 || len(peaks) == 0 {
		return out
	}
	ids := make([]ClientID, len(b.cl.names))
	requests := make([]int64, len(b.cl.names))
	for i := range ids {
		ids[i] = ClientID(i)
		for _, c := range b.cl.classes[i] {
			requests[i] += int64(c)
		}
	}
	slices.SortFunc(ids, func(x, y ClientID) int {
		return cmp.Or(-cmp.Compare(peaks[0][x], peaks[0][y]), -cmp.Compare(requests[x], requests[y]),
			strings.Compare(b.cl.names[x], b.cl.names[y]))
	})
	for _, id := range ids[:min(n, len(ids))] {
		tc := TopClient{Client: o.Namer.Name(b.cl.names[id], b.cl.hashed[id]), Class: classes[id].String(),
			Requests: requests[id], Peaks: map[string]int64{}}
		for wi, width := range b.windows {
			tc.Peaks[FormatWindow(time.Duration(width))] = int64(peaks[wi][id])
		}
		out = append(out, tc)
	}
	return out
}
