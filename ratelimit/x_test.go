package ratelimit
import ("testing";"time")
var sink State
var sinkD Decision
func BenchmarkXSliding(b *testing.B) {
	l := Limit{Count: 1<<30, Window: time.Second}
	var s State
	now := noon.UnixNano()
	for b.Loop() { now += 7; s, sinkD = l.Take(s, now, 1) }
	sink = s
}
func BenchmarkXGCRA(b *testing.B) {
	l := Limit{Count: 1<<29, Window: time.Second, Algorithm: GCRA}
	var s State
	now := noon.UnixNano()
	for b.Loop() { now += 7; s, sinkD = l.Take(s, now, 1) }
	sink = s
}
func BenchmarkXFixed(b *testing.B) {
	l := Limit{Count: 1<<30, Window: time.Second, Algorithm: FixedWindow}
	var s State
	now := noon.UnixNano()
	for b.Loop() { now += 7; s, sinkD = l.Take(s, now, 1) }
	sink = s
}
