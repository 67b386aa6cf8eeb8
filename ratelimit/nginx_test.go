package ratelimit

import (
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nginxLimitReq is one key's state in nginx's limit_req module
// (ngx_http_limit_req_lookup, nodelay): excess in thousandths of a
// request, time in milliseconds, rate in thousandths of a request a
// second. A new key passes with no excess; a known one passes when what
// is left after the leak, plus one request, is at most the burst.
type nginxLimitReq struct {
	rate, burst  int64 // ×1000
	excess, last int64
	known        bool
}

func (n *nginxLimitReq) take(ms int64) bool {
	if !n.known {
		n.known, n.excess, n.last = true, 0, ms
		return true
	}
	elapsed := ms - n.last
	excess := max(n.excess-n.rate*elapsed/1000+1000, 0)
	if excess > n.burst {
		return false
	}
	n.excess = excess
	if elapsed != 0 {
		n.last = ms
	}
	return true
}

// parseNginxLimitReq reads "rate=10r/s burst=20 nodelay" (burst and
// nodelay optional) as nginx's configuration does: the rate in
// thousandths of a request a second, rounded down.
func parseNginxLimitReq(t *testing.T, s string) *nginxLimitReq {
	t.Helper()
	m := regexp.MustCompile(`^rate=(\d+)r/([sm])(?: burst=(\d+))?(?: nodelay)?$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%q is not rate=Nr/s|m [burst=B] [nodelay]", s)
	}
	rate, _ := strconv.ParseInt(m[1], 10, 64)
	scale := int64(1)
	if m[2] == "m" {
		scale = 60
	}
	burst, _ := strconv.ParseInt("0"+m[3], 10, 64)
	return &nginxLimitReq{rate: rate * 1000 / scale, burst: burst * 1000}
}

// TestNginxLimitReqTranslation holds docs/rules.md's "From nginx
// limit_req" table: for every line, nginx's limit_req with nodelay and
// the gcra limit the page gives admit exactly the same requests, over
// bursts, idle spells and steady traffic near the rate.
func TestNginxLimitReqTranslation(t *testing.T) {
	data, err := os.ReadFile("../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(data), "### From nginx `limit_req`")
	if !ok {
		t.Fatal("docs/rules.md has no section \"From nginx `limit_req`\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	rows := regexp.MustCompile("(?m)^\\| `(rate=[^`]*)` \\| `([^`]*)` \\|").FindAllStringSubmatch(sec, -1)
	if len(rows) < 3 {
		t.Fatalf("the section's table has %d lines, want the translations", len(rows))
	}
	for _, row := range rows {
		t.Run(row[1], func(t *testing.T) {
			l, err := ParseLimitAs(row[2], GCRA)
			if err != nil {
				t.Fatal(err)
			}
			// Arrivals in steps where nginx's leak comes out whole (1 ms
			// for rates per second), as the page says.
			ng := parseNginxLimitReq(t, row[1])
			step := int64(1)
			for ng.rate*step%1000 != 0 {
				step++
			}
			interval := 1000 * 1000 / ng.rate // ms between requests at the rate
			rng := rand.New(rand.NewPCG(1, uint64(len(row[1]))))
			var s State
			ms := int64(1_700_000_000_000)
			passed := 0
			for i := range 20000 {
				switch rng.IntN(4) {
				case 0: // same instant
				case 1: // around the rate
					ms += (interval/2 + rng.Int64N(interval+1)) / step * step
				case 2: // a short gap
					ms += rng.Int64N(interval/step+1) * step
				default: // idle for up to three refills of the whole burst
					if rng.IntN(50) == 0 {
						ms += rng.Int64N(3*int64(l.Window/time.Millisecond)/step+1) * step
					}
				}
				want := ng.take(ms)
				var d Decision
				s, d = l.Take(s, ms*int64(time.Millisecond), 1)
				if d.Allowed != want {
					t.Fatalf("arrival %d at +%d ms: floodgate %s allowed=%v, nginx %s allowed=%v", i, ms-1_700_000_000_000, row[2], d.Allowed, row[1], want)
				}
				if want {
					passed++
				}
			}
			if passed == 0 || passed == 20000 {
				t.Errorf("%d of 20000 passed: the traffic never tested the limit", passed)
			}
		})
	}
}
