package respond

import (
	"fmt"
	"net/http"
	"strconv"
)

// A Kind is what an answer says: its status code, problem type and
// catalog text. The zero Kind is not a valid answer; Write answers it, and
// any other unknown Kind, as InternalError.
type Kind uint8

// The kinds of answer floodgate gives itself.
const (
	// RateLimited is 429 Too Many Requests: a rule's limit refused the
	// request. Always carries Retry-After.
	RateLimited Kind = iota + 1
	// Denied is 403 Forbidden: a deny rule refused the request.
	Denied
	// Unavailable is 503 Service Unavailable: a concurrency cap or other
	// temporary lack of capacity. Always carries Retry-After.
	Unavailable
	// BadGateway is 502 Bad Gateway: the upstream could not be reached.
	BadGateway
	// GatewayTimeout is 504 Gateway Timeout: the upstream did not answer
	// in time.
	GatewayTimeout
	// BadRequest is 400 Bad Request: the request failed validation.
	BadRequest
	// NotFound is 404 Not Found: no route matches the request.
	NotFound
	// InternalError is 500 Internal Server Error: floodgate itself failed.
	InternalError
	// RequestTimeout is 408 Request Timeout: the client did not send its
	// request body in time (server.body_read_timeout, or the route's
	// total timeout).
	RequestTimeout
	// ContentTooLarge is 413 Content Too Large: the request body is over
	// max_body_bytes.
	ContentTooLarge
	// URITooLong is 414 URI Too Long: the request target is over
	// server.max_uri_bytes.
	URITooLong

	numKinds = int(URITooLong)
)

// Problem type URIs (RFC 9457 §3.1.1). The two rate-limit types are the
// ones draft-ietf-httpapi-ratelimit-headers-10 §7 asks IANA to register;
// every other kind is "about:blank", whose meaning is the status code alone.
const (
	TypeQuotaExceeded            = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	TypeTemporaryReducedCapacity = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
	TypeBlank                    = "about:blank"
)

var kindInfo = [numKinds + 1]struct {
	name   string
	status int
	typ    string
}{
	RateLimited:    {"rate_limited", http.StatusTooManyRequests, TypeQuotaExceeded},
	Denied:         {"denied", http.StatusForbidden, TypeBlank},
	Unavailable:    {"unavailable", http.StatusServiceUnavailable, TypeTemporaryReducedCapacity},
	BadGateway:     {"bad_gateway", http.StatusBadGateway, TypeBlank},
	GatewayTimeout: {"gateway_timeout", http.StatusGatewayTimeout, TypeBlank},
	BadRequest:     {"bad_request", http.StatusBadRequest, TypeBlank},
	NotFound:       {"not_found", http.StatusNotFound, TypeBlank},
	InternalError:  {"internal_error", http.StatusInternalServerError, TypeBlank},

	RequestTimeout:  {"request_timeout", http.StatusRequestTimeout, TypeBlank},
	ContentTooLarge: {"content_too_large", http.StatusRequestEntityTooLarge, TypeBlank},
	URITooLong:      {"uri_too_long", http.StatusRequestURITooLong, TypeBlank},
}

var _ fmt.Stringer = Kind(0)

func (k Kind) valid() bool { return k >= 1 && int(k) <= numKinds }

// orInternal returns k, or InternalError when k is not a valid Kind.
func (k Kind) orInternal() Kind {
	if k.valid() {
		return k
	}
	return InternalError
}

// String returns the kind's name for logs and metric labels, such as
// "rate_limited".
func (k Kind) String() string {
	if k.valid() {
		return kindInfo[k].name
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Status returns the HTTP status code of k's answers; 500 for an invalid Kind.
func (k Kind) Status() int { return kindInfo[k.orInternal()].status }

// ProblemType returns the RFC 9457 problem type URI of k's answers.
func (k Kind) ProblemType() string { return kindInfo[k.orInternal()].typ }

// alwaysRetry reports whether k's answers always carry Retry-After (at
// least one second): the refusals a client is expected to retry.
func (k Kind) alwaysRetry() bool { return k == RateLimited || k == Unavailable }
