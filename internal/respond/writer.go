package respond

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/floodgate/floodgate/internal/httpsyntax"
	"github.com/floodgate/floodgate/ratelimit"
)

// Options configure a Writer. The zero Options are valid: English by
// default, no CORS headers, RateLimit fields on.
type Options struct {
	// DefaultLanguage is the tag of the catalog language ("en" or "es")
	// used when Accept-Language accepts none of those offered, and the
	// language of a message's untagged text. Default "en".
	DefaultLanguage string
	// CORS adds CORS response headers to every answer, so that a browser
	// script can read a 429 instead of reporting a network error.
	CORS CORS
	// OmitRateLimitFields leaves the RateLimit and RateLimit-Policy fields
	// off answers.
	OmitRateLimitFields bool
}

// CORS lists the CORS headers of answers.
type CORS struct {
	// AllowOrigins are the origins allowed to read answers: ["*"] for
	// any, or origins such as "https://mavedb.org", one of which is echoed
	// in Access-Control-Allow-Origin when the request's Origin is exactly
	// it. Empty disables CORS headers.
	AllowOrigins []string
	// ExposeHeaders is Access-Control-Expose-Headers. Default
	// Retry-After, RateLimit, RateLimit-Policy.
	ExposeHeaders []string
}

// A Writer writes floodgate's own answers. Build it once at config load
// with NewWriter; the zero Writer is ready to use with zero Options. A
// Writer is immutable and safe for concurrent use.
type Writer struct {
	lang    lang
	cors    bool
	anyOrig bool
	origins [][]string // each a one-element value slice for Access-Control-Allow-Origin
	expose  []string
	vary    []string
	omitRL  bool
}

// Header values shared by every answer. The header map holds these
// slices themselves (net/http never writes to them); their capacity is
// their length, so a later Header.Add copies rather than writes in place.
var (
	valNoStore  = []string{"no-store"}
	valNosniff  = []string{"nosniff"}
	valStar     = []string{"*"}
	valVary     = []string{"Accept, Accept-Language"}
	valCSP      = []string{htmlCSP}
	valTypes    = [numFormats][]string{formatJSON: {"application/problem+json; charset=utf-8"}, formatText: {"text/plain; charset=utf-8"}, formatHTML: {"text/html; charset=utf-8"}}
	valLangs    [numLangs][]string
	defaultExpo = []string{"Retry-After", "RateLimit", "RateLimit-Policy"}
)

func init() {
	for l := range lang(numLangs) {
		valLangs[l] = []string{catalogs[l].tag}
	}
}

// NewWriter returns a Writer for o, or an error listing every invalid
// option.
func NewWriter(o Options) (*Writer, error) {
	var errs []error
	w := &Writer{omitRL: o.OmitRateLimitFields}
	if o.DefaultLanguage != "" {
		l, ok := langByTag(strings.ToLower(o.DefaultLanguage))
		if !ok {
			errs = append(errs, fmt.Errorf("default language %q is not supported (supported: %s)", o.DefaultLanguage, strings.Join(Languages(), ", ")))
		}
		w.lang = l
	}
	for _, origin := range o.CORS.AllowOrigins {
		if origin == "*" {
			w.anyOrig = true
			continue
		}
		norm, err := normalizeOrigin(origin)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w.origins = append(w.origins, []string{norm})
	}
	if w.anyOrig && len(o.CORS.AllowOrigins) > 1 {
		errs = append(errs, errors.New(`cors allow_origins: "*" cannot be listed with other origins`))
	}
	w.cors = len(o.CORS.AllowOrigins) > 0
	if w.cors {
		expose := o.CORS.ExposeHeaders
		if len(expose) == 0 {
			expose = defaultExpo
		}
		for _, h := range expose {
			if !isToken(h) {
				errs = append(errs, fmt.Errorf("cors expose_headers: %q is not a header name", h))
			}
		}
		w.expose = []string{strings.Join(expose, ", ")}
		if !w.anyOrig {
			w.vary = []string{valVary[0] + ", Origin"}
		}
	} else if len(o.CORS.ExposeHeaders) > 0 {
		errs = append(errs, errors.New("cors expose_headers: set without allow_origins"))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return w, nil
}

// normalizeOrigin checks that s is a serialized origin
// (scheme "://" host [":" port]) and returns it in lower case, as
// browsers send it.
func normalizeOrigin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", fmt.Errorf("cors allow_origins: %q is not an origin such as https://example.org or *", s)
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// A RuleSpec describes what is static about one rule's answers.
type RuleSpec struct {
	// Name is the rule's name: the problem's "rule" member, {rule}, and
	// the HTML page's small print. Empty for none.
	Name string
	// Limit is the rule's limit as configured, such as "100/5m", for
	// {limit} and the problem's "limit" member. Empty for none.
	Limit string
	// Limits, when the rule has several limits, holds each one's text in
	// the order of Policies: the answer names the one that refused
	// (Answer.Limit), and Limit is ignored.
	Limits []string
	// RetryAfter, if positive, is the Retry-After of every answer the
	// rule gives (rounded up to whole seconds), instead of the limiter's.
	RetryAfter time.Duration
	// Message, if not nil, replaces the catalog's detail text.
	Message *Message
	// Policies are the rule's quota policies, in the order of its limits,
	// advertised in RateLimit-Policy; Answer.Limit indexes them. Empty
	// for no RateLimit fields.
	Policies []Policy
}

// A SpecError is a problem NewRule found with one field of a RuleSpec,
// so that a caller can say where it is in its own terms.
type SpecError struct {
	// Field is the RuleSpec field: "Name" (a message using {rule} has
	// none), "RetryAfter" or "Message".
	Field string
	// From is the field whose value makes Field's wrong, if another:
	// "Limits" for a message using {limit} in a rule without limits.
	From string
	// Err is the problem.
	Err error
}

func (e *SpecError) Error() string { return e.Err.Error() }

func (e *SpecError) Unwrap() error { return e.Err }

// A Rule is a compiled RuleSpec. Bodies are built on first use for each
// kind, language and format, then reused. A Rule is safe for concurrent use.
type Rule struct {
	name, limit string
	fixed       time.Duration // RuleSpec.RetryAfter
	msg         *Message
	policyField []string // RateLimit-Policy value
	policies    []string // policy names
	violated    []string // JSON string literals for "violated-policies"
	// tmpl holds the bodies, by kind, slot of the message's text (see
	// Message.slots), catalog language and format.
	tmpl []atomic.Pointer[template]
	// byLimit holds, for a rule of several limits, the rule as each limit
	// refusing it: the same but for limit (and its own bodies).
	byLimit []*Rule
}

// noRule stands for a nil *Rule.
var noRule = withTemplates(&Rule{})

// withTemplates gives r room for its bodies and returns it.
func withTemplates(r *Rule) *Rule {
	r.tmpl = make([]atomic.Pointer[template], numKinds*r.msg.slots()*int(numLangs)*int(numFormats))
	return r
}

// NewRule compiles spec. The error lists every problem: a negative
// RetryAfter, a message using {rule} or {limit} that the rule lacks,
// invalid UTF-8, and invalid policies (see FormatPolicy). Those of one
// field of spec are a *SpecError naming it.
func NewRule(spec RuleSpec) (*Rule, error) {
	var errs []error
	if len(spec.Limits) > 0 {
		spec.Limit = spec.Limits[0]
	}
	r := withTemplates(&Rule{name: spec.Name, limit: spec.Limit, msg: spec.Message})
	switch {
	case spec.RetryAfter < 0:
		errs = append(errs, &SpecError{Field: "RetryAfter", Err: fmt.Errorf("retry_after %s is negative", spec.RetryAfter)})
	case spec.RetryAfter > 0:
		r.fixed = spec.RetryAfter
	}
	if !utf8.ValidString(spec.Name) || !utf8.ValidString(spec.Limit) {
		errs = append(errs, errors.New("name or limit is not valid UTF-8"))
	}
	if spec.Message.uses(phRule) && spec.Name == "" {
		errs = append(errs, &SpecError{Field: "Name", Err: errors.New("message uses {rule} but the rule has no name")})
	}
	if spec.Message.uses(phLimit) && spec.Limit == "" {
		errs = append(errs, &SpecError{Field: "Message", From: "Limits", Err: errors.New("message uses {limit} but the rule has no limit")})
	}
	if len(spec.Policies) > 0 {
		field, err := FormatPolicy(spec.Policies...)
		if err != nil {
			errs = append(errs, err)
		}
		r.policyField = []string{field}
		for _, p := range spec.Policies {
			r.policies = append(r.policies, p.Name)
			r.violated = append(r.violated, jsonString(p.Name))
		}
	} else if spec.Name != "" {
		r.violated = []string{jsonString(spec.Name)}
	}
	for _, l := range spec.Limits {
		if !utf8.ValidString(l) || l == "" && spec.Message.uses(phLimit) {
			errs = append(errs, errors.New("a limit is empty or not valid UTF-8"))
		}
	}
	if len(spec.Limits) > 1 {
		r.byLimit = append(r.byLimit, r) // the first limit's is r itself
		for _, l := range spec.Limits[1:] {
			r.byLimit = append(r.byLimit, withTemplates(&Rule{name: r.name, limit: l, fixed: r.fixed, msg: r.msg,
				policyField: r.policyField, policies: r.policies, violated: r.violated}))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// Name returns the rule's name.
func (r *Rule) Name() string { return r.name }

// PolicyField returns the rule's RateLimit-Policy field value, or "" when
// it has no policies. Forwarded responses may carry it too.
func (r *Rule) PolicyField() string {
	if len(r.policyField) == 0 {
		return ""
	}
	return r.policyField[0]
}

// PolicyFieldValues returns the RateLimit-Policy field as a header value
// list, shared: callers must not modify it (appending copies, since its
// capacity is its length).
func (r *Rule) PolicyFieldValues() []string {
	if len(r.policyField) == 0 {
		return nil
	}
	return r.policyField[:1:1]
}

// PolicyName returns the name of the rule's i'th policy, for
// AppendRateLimit, or "" when there is none.
func (r *Rule) PolicyName(i int) string {
	if i < 0 || i >= len(r.policies) {
		return ""
	}
	return r.policies[i]
}

func (r *Rule) template(k Kind, slot int, l lang, f format) *template {
	if r.tmpl == nil { // a Rule NewRule did not make: no room to keep it
		return buildTemplate(k, slot, l, f, r)
	}
	p := &r.tmpl[((int(k-1)*r.msg.slots()+slot)*int(numLangs)+int(l))*int(numFormats)+int(f)]
	if t := p.Load(); t != nil {
		return t
	}
	t := buildTemplate(k, slot, l, f, r)
	if p.CompareAndSwap(nil, t) {
		return t
	}
	return p.Load()
}

// An Answer is one response floodgate gives itself. It is a small value:
// build one per refusal.
type Answer struct {
	// Kind says what the answer is.
	Kind Kind
	// Rule is the rule that decided, or nil (no route, upstream failure).
	Rule *Rule
	// RetryAfter is how long until the request would be admitted (the
	// limiter's Decision.RetryAfter). The Retry-After field is it rounded
	// up to whole seconds, at least 1 for RateLimited and Unavailable,
	// absent for other kinds when zero; a rule's fixed RetryAfter wins
	// (see Timing). On a RateLimited or Unavailable answer, the RateLimit
	// field's t is the Retry-After.
	RetryAfter time.Duration
	// Limit is the index, among the rule's policies, of the limit that
	// refused (Decision.Limit).
	Limit int
	// Remaining is the RateLimit field's "r" (Decision.Remaining), usually 0.
	Remaining int64
}

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 2048)
	return &b
}}

// Write writes answer a to rw: status, headers and, except for HEAD
// requests, the body negotiated from r's Accept and Accept-Language (see
// the package documentation). It sets the headers it owns and leaves any
// others already in rw.Header(). r may be nil: the defaults apply.
// Errors writing the body (a gone client) are ignored.
func (w *Writer) Write(rw http.ResponseWriter, r *http.Request, a Answer) {
	k := a.Kind.orInternal()
	rule := a.Rule
	if rule == nil {
		rule = noRule
	}
	if a.Limit > 0 && a.Limit < len(rule.byLimit) {
		rule = rule.byLimit[a.Limit] // {limit} and "limit" name the refusing one
	}
	var hdr http.Header
	head := false
	if r != nil {
		hdr, head = r.Header, r.Method == http.MethodHead
	}
	f := negotiateFormat(hdr["Accept"])
	slot, l := rule.msg.choose(hdr["Accept-Language"], w.lang)
	t := rule.template(k, slot, l, f)

	var retry int64
	if rule.fixed > 0 || a.RetryAfter > 0 || k.alwaysRetry() {
		retry, _ = Timing(rule.fixed, ratelimit.Decision{RetryAfter: a.RetryAfter})
	}
	idx := 0
	if a.Limit > 0 && a.Limit < len(rule.violated) {
		idx = a.Limit
	}
	var violated string
	if len(rule.violated) > 0 {
		violated = rule.violated[idx]
	}

	bp := bufPool.Get().(*[]byte)
	body := t.render((*bp)[:0], l, retry, violated)

	// The values that change per answer share one string and one slice.
	var scratch [128]byte
	d := strconv.AppendInt(scratch[:0], int64(len(body)), 10)
	endLen := len(d)
	if retry > 0 {
		d = strconv.AppendInt(d, retry, 10)
	}
	endRetry := len(d)
	withRL := !w.omitRL && k.alwaysRetry() && len(rule.policies) > 0
	if withRL {
		d = appendRateLimit(d, rule.policies[min(idx, len(rule.policies)-1)], a.Remaining, retry)
	}
	s := string(d)
	vals := make([]string, 3)

	h := rw.Header()
	vals[0] = s[:endLen]
	h["Content-Length"] = vals[0:1:1]
	h["Content-Type"] = valTypes[f]
	h["Content-Language"] = rule.msg.contentLanguage(slot, l)
	h["X-Content-Type-Options"] = valNosniff
	h["Cache-Control"] = valNoStore
	if w.vary != nil {
		h["Vary"] = w.vary
	} else {
		h["Vary"] = valVary
	}
	if f == formatHTML {
		h["Content-Security-Policy"] = valCSP
	}
	if retry > 0 {
		vals[1] = s[endLen:endRetry]
		h["Retry-After"] = vals[1:2:2]
	}
	if withRL {
		vals[2] = s[endRetry:]
		h["Ratelimit"] = vals[2:3:3]
	}
	if !w.omitRL && rule.policyField != nil {
		h["Ratelimit-Policy"] = rule.policyField
	}
	if w.cors {
		if w.anyOrig {
			h["Access-Control-Allow-Origin"] = valStar
		} else if o := hdr["Origin"]; len(o) == 1 {
			for _, v := range w.origins {
				if v[0] == o[0] {
					h["Access-Control-Allow-Origin"] = v
					break
				}
			}
		}
		h["Access-Control-Expose-Headers"] = w.expose
	}
	rw.WriteHeader(k.Status())
	if !head {
		_, _ = rw.Write(body)
	}
	if cap(body) <= 64<<10 {
		*bp = body[:0]
		bufPool.Put(bp)
	}
}

// isToken reports whether s is an RFC 9110 token, such as a header name.
func isToken(s string) bool { return httpsyntax.IsToken(s) }
