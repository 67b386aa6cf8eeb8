package forward

import (
	"context"
	"net"
	"testing"
	"time"
)

// The watchdog's timer is set for the earliest deadline among the
// exchanges in flight, context or response head, when that comes before
// its tick: a route's total timeout ends the wait on time, not up to a
// tick late.
func TestWatchdogSetForEarliestDeadline(t *testing.T) {
	wd := &watchdog{tick: time.Hour}
	t.Cleanup(func() {
		if wd.timer != nil {
			wd.timer.Stop()
		}
	})
	newPiped := func() *conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return newConn(a)
	}
	at := func() int64 {
		wd.mu.Lock()
		defer wd.mu.Unlock()
		return wd.at
	}
	withDeadline := func(d time.Duration) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		t.Cleanup(cancel)
		return ctx
	}

	now := monoNow()
	plain := newPiped()
	wd.add(context.Background(), plain, now)
	if got := at(); got != now+int64(time.Hour) {
		t.Fatalf("one exchange without a deadline: timer at +%v, want the tick", time.Duration(got-now))
	}
	soon, later := newPiped(), newPiped()
	wd.add(withDeadline(time.Minute), soon, monoNow())
	if got := at(); got != soon.ctxDeadline || soon.ctxDeadline > now+int64(time.Minute)+int64(time.Second) {
		t.Fatalf("a context with a deadline in a minute: timer at +%v, want its deadline (+%v)",
			time.Duration(got-now), time.Duration(soon.ctxDeadline-now))
	}
	wd.add(withDeadline(2*time.Minute), later, monoNow())
	if got := at(); got != soon.ctxDeadline {
		t.Fatalf("a later deadline moved the timer to +%v", time.Duration(got-now))
	}

	// Each look sets it again for the earliest left.
	wd.scan()
	if got := at(); got != soon.ctxDeadline {
		t.Fatalf("after a look: timer at +%v, want the earliest deadline (+%v)", time.Duration(got-now), time.Duration(soon.ctxDeadline-now))
	}
	wd.remove(soon)
	wd.scan()
	if got := at(); got != later.ctxDeadline {
		t.Fatalf("after the earliest left: timer at +%v, want the next deadline (+%v)", time.Duration(got-now), time.Duration(later.ctxDeadline-now))
	}
	head := monoNow() + int64(30*time.Second)
	plain.headDeadline.Store(head)
	wd.scan()
	if got := at(); got != head {
		t.Fatalf("a response head due in 30s: timer at +%v, want +%v", time.Duration(got-now), time.Duration(head-now))
	}
	for _, c := range []*conn{plain, later} {
		if wd.remove(c) {
			t.Errorf("an exchange was poisoned before any deadline")
		}
	}
	wd.scan()
	wd.mu.Lock()
	running := wd.running
	wd.mu.Unlock()
	if running {
		t.Error("the timer is still set with nothing in flight")
	}
}
