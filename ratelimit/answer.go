package ratelimit

import "time"

// RetryAfterSeconds returns d.RetryAfter as a Retry-After field carries
// it: in whole seconds, rounded up, so that a client that waits that long
// is admitted if no other events arrive meanwhile, and at least 1, since
// a refusal never says "retry now". It is 0 when d is Allowed.
func (d Decision) RetryAfterSeconds() int64 {
	if d.Allowed {
		return 0
	}
	return max(ceilSeconds(d.RetryAfter), 1)
}

// ResetSeconds returns the reset parameter t of the RateLimit field
// (draft-ietf-httpapi-ratelimit-headers) for d, in whole seconds: for a
// refusal, RetryAfterSeconds, the instant Retry-After names, as the draft
// asks; for an admission, ResetAfter rounded up, which is 0 for an empty
// counter and at most the deciding limit's Window (see
// Decision.ResetAfter for what it means for each algorithm).
func (d Decision) ResetSeconds() int64 {
	if !d.Allowed {
		return d.RetryAfterSeconds()
	}
	return ceilSeconds(d.ResetAfter)
}

// ceilSeconds returns d in whole seconds, rounded up; 0 for d ≤ 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
