package httplimit

import (
	"strconv"

	"github.com/floodgate/floodgate/ratelimit"
)

// An Outcome is what a rule did with one event. The zero value is
// Allowed. Its names are the gateway's decision names.
type Outcome uint8

// Outcomes.
const (
	// Allowed: within the limits, or the store failed and the rule fails
	// open (Event.Err is then set).
	Allowed Outcome = iota
	// Blocked: refused, with 429 over the limit, or with 503 when the
	// store failed and the rule fails closed (Event.Err is then set).
	Blocked
	// WouldBlock: a rule in shadow mode would have refused; it went ahead.
	WouldBlock
)

var outcomeNames = [...]string{Allowed: "allowed", Blocked: "blocked", WouldBlock: "would_block"}

// String returns "allowed", "blocked" or "would_block".
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// An Event is one decision of a rule, passed to Options.Observe. It holds
// no key value, so it can feed metrics with bounded labels.
type Event struct {
	// Rule is the rule's name.
	Rule string
	// Key is the rule's key type, Key.String(): "ip", "user", ….
	Key string
	// Outcome is what the rule did.
	Outcome Outcome
	// Decision is the store's decision; the zero Decision when Err is set.
	Decision ratelimit.Decision
	// Err is the store's failure, or nil.
	Err error
}
