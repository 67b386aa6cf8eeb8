package respond

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/floodgate/floodgate/ratelimit"
)

// A Policy is one quota policy as advertised in the RateLimit-Policy field
// (draft-ietf-httpapi-ratelimit-headers-10 §3.1).
type Policy struct {
	// Name identifies the policy; RateLimit items and the problem's
	// "violated-policies" member refer to it. It is serialized as an
	// RFC 9651 String, so it must be printable ASCII.
	Name string
	// Quota is the "q" parameter: how many quota units the policy allows
	// per Window. Non-negative.
	Quota int64
	// Window is the "w" parameter, rounded up to whole seconds. Zero omits it.
	Window time.Duration
	// Unit is the "qu" parameter: "requests", "content-bytes" or
	// "concurrent-requests". Empty omits it; the draft's default is
	// "requests".
	Unit string
}

// maxSFInteger is the largest RFC 9651 Integer (15 decimal digits).
const maxSFInteger = 999_999_999_999_999

var quotaUnits = map[string]bool{"requests": true, "content-bytes": true, "concurrent-requests": true}

// FormatPolicy returns the RateLimit-Policy field value listing policies,
// such as `"csv";q=100;w=300`, or `"burst";q=60;w=60, "daily";q=5000;w=86400`
// for several. The value is static per rule: compute it once at config
// load. It reports every invalid policy: an empty, duplicate or non-ASCII
// name, a negative quota, a negative window or an unknown unit.
func FormatPolicy(policies ...Policy) (string, error) {
	if len(policies) == 0 {
		return "", errors.New("ratelimit policy: no policies")
	}
	var errs []error
	seen := make(map[string]bool, len(policies))
	var b []byte
	for i, p := range policies {
		if err := checkSFString(p.Name); err != nil {
			errs = append(errs, fmt.Errorf("ratelimit policy %d: name %q: %w", i, p.Name, err))
		}
		if seen[p.Name] {
			errs = append(errs, fmt.Errorf("ratelimit policy %d: duplicate name %q", i, p.Name))
		}
		seen[p.Name] = true
		if p.Quota < 0 || p.Quota > maxSFInteger {
			errs = append(errs, fmt.Errorf("ratelimit policy %q: quota %d is outside 0..%d", p.Name, p.Quota, int64(maxSFInteger)))
		}
		if p.Window < 0 {
			errs = append(errs, fmt.Errorf("ratelimit policy %q: negative window %s", p.Name, p.Window))
		}
		if p.Unit != "" && !quotaUnits[p.Unit] {
			errs = append(errs, fmt.Errorf("ratelimit policy %q: unknown quota unit %q (allowed: requests, content-bytes, concurrent-requests)", p.Name, p.Unit))
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendSFString(b, p.Name)
		b = append(b, ";q="...)
		b = strconv.AppendInt(b, p.Quota, 10)
		if p.Unit != "" {
			b = append(b, ";qu="...)
			b = appendSFString(b, p.Unit)
		}
		if p.Window > 0 {
			b = append(b, ";w="...)
			b = strconv.AppendInt(b, clampSF(RetrySeconds(p.Window)), 10)
		}
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return string(b), nil
}

// AppendRateLimit appends to dst one item of the RateLimit field
// (draft-ietf-httpapi-ratelimit-headers-10 §4): `"policy";r=remaining;t=reset`,
// with reset in whole seconds (from Timing). A negative remaining or reset
// is written as 0, values beyond the 15 digits of an RFC 9651 Integer are
// clamped, and bytes a String cannot hold are written as '?' (FormatPolicy
// rejects such names at load time). To list several items, separate them
// with ", ". It does not allocate when dst has room.
func AppendRateLimit(dst []byte, policy string, remaining, reset int64) []byte {
	return appendRateLimit(dst, policy, remaining, reset)
}

func appendRateLimit(dst []byte, policy string, remaining, resetSeconds int64) []byte {
	dst = appendSFString(dst, policy)
	dst = append(dst, ";r="...)
	dst = strconv.AppendInt(dst, clampSF(remaining), 10)
	dst = append(dst, ";t="...)
	return strconv.AppendInt(dst, clampSF(resetSeconds), 10)
}

// Timing returns what floodgate tells a client about a rule's decision
// d, in whole seconds: retryAfter, the Retry-After of a refusal (0 when d
// admits), and reset, the RateLimit field's t. It is the one computation
// behind the answers' fields, the decision log's retry_after_s and
// explain, so that they agree:
//
//   - d admits: no Retry-After; t is d.ResetSeconds(), the time until the
//     quota resets (for each algorithm, see ratelimit.Decision.ResetAfter),
//     at most the policy's window w.
//   - d refuses, and the rule has a fixed retry_after (fixed > 0, such as
//     MaveDB's 300): Retry-After is fixed, rounded up to whole seconds,
//     whatever the limiter computed; t is the same.
//   - d refuses otherwise: Retry-After is d.RetryAfterSeconds(), the
//     limiter's wait rounded up and at least 1, after which the request is
//     admitted if nothing else is counted meanwhile; t is the same, as the
//     draft asks (t and Retry-After name one instant).
func Timing(fixed time.Duration, d ratelimit.Decision) (retryAfter, reset int64) {
	switch {
	case d.Allowed:
		return 0, d.ResetSeconds()
	case fixed > 0:
		retryAfter = RetrySeconds(fixed)
	default:
		retryAfter = d.RetryAfterSeconds()
	}
	return retryAfter, retryAfter
}

// Timing returns Timing(fixed, d) for the rule's fixed retry_after
// (RuleSpec.RetryAfter). r may be nil: no fixed value.
func (r *Rule) Timing(d ratelimit.Decision) (retryAfter, reset int64) {
	if r == nil {
		return Timing(0, d)
	}
	return Timing(r.fixed, d)
}

// RetrySeconds returns d in whole seconds rounded up, and at least 1: the
// Retry-After value for a refusal that lasts d. A client told to come
// back in 0 seconds would come back at once.
func RetrySeconds(d time.Duration) int64 {
	return ratelimit.Decision{RetryAfter: d}.RetryAfterSeconds()
}

func clampSF(n int64) int64 {
	switch {
	case n < 0:
		return 0
	case n > maxSFInteger:
		return maxSFInteger
	}
	return n
}

// checkSFString reports whether s can be serialized as a non-empty
// RFC 9651 String (§3.3.3: printable ASCII).
func checkSFString(s string) error {
	if s == "" {
		return errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return fmt.Errorf("byte %#x at %d is not printable ASCII", s[i], i)
		}
	}
	return nil
}

// appendSFString appends s serialized as an RFC 9651 String (§4.1.6),
// writing '?' for bytes a String cannot hold.
func appendSFString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20 || c > 0x7e:
			dst = append(dst, '?')
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
