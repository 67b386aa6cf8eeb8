// Package rules compiles the rules of a configuration into what the request
// path runs: CEL conditions type-checked over the request model, key
// extractors and limits. Nothing is parsed per request.
//
// Evaluation semantics (docs/rules.md): rules run in order; a rule whose
// condition is false is skipped; `allow` stops evaluation and forwards;
// `deny` answers 403 without counting; `count` and `block` count the
// request under their key and continue, unless a `block` rule's limit
// refuses it, which answers 429 and stops. A refused request consumes no
// quota of the rule that refused it, but has been counted by the rules
// before it that admitted it. In log-only mode deny and block become
// would-blocks and evaluation continues. A concurrency cap, a ban or a
// fail-closed store failure refuses like a limit (503 for caps and store
// failures); counts that depend on the response are made by Finish.
package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/ratelimit"
)

// Action is what a rule does with a request it matches.
type Action uint8

// Actions, in the order of config.Rule.Action's allowed values.
const (
	Block Action = iota // count; over the limit → 429
	Deny                // 403, no counting
	Count               // count only: over the limit → would-block
	Allow               // forward, stop evaluating
)

var actionNames = [...]string{Block: "block", Deny: "deny", Count: "count", Allow: "allow"}

func (a Action) String() string { return actionNames[a] }

// Rule is one compiled rule. Its fields are read-only after Compile.
type Rule struct {
	Index  int
	Name   string
	Action Action
	// Limits are enforced together (ratelimit.Store.Take semantics).
	Limits []ratelimit.Limit
	// RetryAfter is the fixed Retry-After of the rule's answers; zero means
	// computed from the limiter.
	RetryAfter time.Duration
	// KeyType names the characteristics the rule counts by, for logs and
	// metrics: "ip", "ip+header:x-api-key", "global".
	KeyType string
	// Message is the configured body text, by language.
	Message config.Message
	// Candidates are shadow limits counted on the same key (count only).
	Candidates []ratelimit.Limit
	// Ban keeps a refused key refused this long; zero: no ban.
	Ban time.Duration
	// MaxInflight and MaxInflightPerKey cap requests in flight (0: none).
	MaxInflight, MaxInflightPerKey int64
	// FailClosed answers 503 when the store fails, instead of admitting
	// the request (fail open).
	FailClosed bool
	// Cost is what a request costs (config.Cost* constants); CostHeader
	// names the response header for config.CostHeader.
	Cost, CostHeader string
	// Plan, when set, is the API-client plan this rule holds the limits
	// of (a rule with limits_from: plan compiles to one Rule per plan):
	// it applies only to requests whose client has that plan.
	Plan string
	// ConfigIndex is the index of the rule in the configuration's rules.
	ConfigIndex int

	when      *condition        // nil: always
	whenSrc   string            // when's source, trimmed
	whenSlot  int               // rules with the same when share a slot (< 64), evaluated once a request; -1: none
	countWhen cel.Program       // nil: every request counts
	deferred  bool              // counted after the response (count_when or a cost)
	scale     int64             // store units per cost unit (1000 for upstream_seconds: ms)
	storeLims []ratelimit.Limit // Limits in store units
	prefix    string            // counter-key prefix: rule name and key spec
	capKey    string            // Inflight key of the per-process cap
	parts     []keyPart
	// needs are the request identities the rule's key is made of
	// (session, API client): without them, the rule does not apply.
	needsSession, needsClient bool
	// needsResponse: the rule holds a slot until the response or counts
	// after it (NeedsResponse), so it cannot decide without forwarding.
	needsResponse bool
}

// NeedsSession reports that the rule applies only to requests with a
// verified session: its key has session.
func (r *Rule) NeedsSession() bool { return r.needsSession }

// NeedsAPIClient reports that the rule applies only to requests of a
// known API client: its key has api_client, or it holds a plan's limits.
func (r *Rule) NeedsAPIClient() bool { return r.needsClient || r.Plan != "" }

// ReadsSession reports that the rule's condition reads the request's
// session (session.present, session.valid).
func (r *Rule) ReadsSession() bool { return r.when != nil && r.when.readsPrefix("session.") }

// ReadsAPIClient reports that the rule's condition reads the request's
// API client (api_client.id, api_client.plan).
func (r *Rule) ReadsAPIClient() bool { return r.when != nil && r.when.readsPrefix("api_client.") }

// Set is a compiled, ordered rule list. It is immutable and safe for
// concurrent use.
type Set struct {
	Rules []*Rule
}

type keyPart struct {
	kind config.KeyKind
	arg  string      // canonical header name, query name
	prg  cel.Program // KeyExpr
}

// NewEnv returns the CEL environment with the request model declared.
func NewEnv() (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(variables)+1)
	for _, v := range variables {
		opts = append(opts, cel.Variable(v.name, v.typ))
	}
	// OptionalTypes: map[?key].orValue(default), the documented way to
	// read a field that may be absent without an evaluation error.
	opts = append(opts, cel.CrossTypeNumericComparisons(true), cel.OptionalTypes())
	return cel.NewEnv(opts...)
}

// NewResponseEnv returns the CEL environment of count_when conditions: the
// request model plus response.status and response.headers.
func NewResponseEnv() (*cel.Env, error) {
	opts := make([]cel.EnvOption, 0, len(variables)+3)
	for _, v := range variables {
		opts = append(opts, cel.Variable(v.name, v.typ))
	}
	opts = append(opts,
		cel.Variable("response.status", cel.IntType),
		cel.Variable("response.headers", cel.MapType(cel.StringType, cel.StringType)),
		cel.CrossTypeNumericComparisons(true), cel.OptionalTypes())
	return cel.NewEnv(opts...)
}

// Compile compiles the rules of a loaded and defaulted configuration. It
// reports the problems only compiling can find (CEL syntax and types) by
// field and line; fields that do not parse are left out, since
// config.File.Validate reports them. Call both, as `floodgate validate` and
// `floodgate serve` do, and refuse the configuration if either reports.
func Compile(f *config.File) (*Set, config.Problems) {
	env, err := NewEnv()
	if err != nil {
		return nil, config.Problems{f.Problem("rules", "cannot build the CEL environment: "+err.Error())}
	}
	respEnv, err := NewResponseEnv()
	if err != nil {
		return nil, config.Problems{f.Problem("rules", "cannot build the CEL environment: "+err.Error())}
	}
	var problems config.Problems
	set := &Set{}
	ms := newMatchSlots()
	for i, rc := range f.Config.Rules {
		if rc.LimitsFrom != config.LimitsFromPlan {
			r, ps := compileRule(f, env, respEnv, ms, i, rc)
			problems = append(problems, ps...)
			r.Index = len(set.Rules)
			set.Rules = append(set.Rules, r)
			continue
		}
		// One rule per plan with limits, in plan-name order; a plan
		// without limits (exempt) has none.
		plans := f.Config.APIClients.Plans
		names := make([]string, 0, len(plans))
		for name := range plans {
			names = append(names, name)
		}
		slices.Sort(names)
		// The rule's own problems come with every plan: each is reported
		// once, and also when no plan has limits.
		seen := map[string]bool{}
		compiled := false
		for _, name := range names {
			if len(plans[name]) == 0 {
				continue
			}
			prc := rc
			prc.Name, prc.Limits, prc.LimitsFrom = rc.Name+"."+name, plans[name], ""
			r, ps := compileRule(f, env, respEnv, ms, i, prc)
			compiled = true
			for _, p := range ps {
				if !seen[p.Error()] {
					seen[p.Error()] = true
					problems = append(problems, p)
				}
			}
			r.Plan = name
			r.Index = len(set.Rules)
			set.Rules = append(set.Rules, r)
		}
		if !compiled {
			_, ps := compileRule(f, env, respEnv, ms, i, rc)
			problems = append(problems, ps...)
		}
	}
	shareConditions(set.Rules)
	return set, problems
}

// ShareConditions numbers again the conditions s's rules share (each is
// evaluated once a request, see shareConditions): for a Set assembled from
// the rules of several compiled ones, whose numbers would otherwise
// collide.
func (s *Set) ShareConditions() { shareConditions(s.Rules) }

// shareConditions gives rules with the same condition (MaveDB's three
// CSV rules, the rules of a plan) one slot, so that it is evaluated once a
// request however many rules it guards. 64 slots: a set with more
// distinct conditions evaluates the rest every time.
func shareConditions(rules []*Rule) {
	slots := map[string]int{}
	for _, r := range rules {
		r.whenSlot = -1
		if r.when == nil {
			continue
		}
		slot, ok := slots[r.whenSrc]
		if !ok {
			if len(slots) == 64 {
				continue
			}
			slot = len(slots)
			slots[r.whenSrc] = slot
		}
		r.whenSlot = slot
	}
}

// compileRule compiles rule i of f, rc (which may differ from
// f.Config.Rules[i] for a plan's rule).
func compileRule(f *config.File, env, respEnv *cel.Env, ms *matchSlots, i int, rc config.Rule) (*Rule, config.Problems) {
	var problems config.Problems
	path := "rules[" + strconv.Itoa(i) + "]"
	r := &Rule{ConfigIndex: i, Name: rc.Name, Message: rc.Message}
	switch rc.Action {
	case "deny":
		r.Action = Deny
	case "count":
		r.Action = Count
	case "allow":
		r.Action = Allow
	default:
		r.Action = Block
	}
	if w := strings.TrimSpace(rc.When); w != "" && w != "true" {
		c, err := newCondition(env, w, ms)
		if err != nil {
			problems = append(problems, f.Problem(path+".when", withResponseHint(err, w)))
		}
		r.when, r.whenSrc = c, w
	}
	alg, _ := ratelimit.ParseAlgorithm(rc.Algorithm)
	for _, s := range rc.Limits {
		if l, err := config.ParseLimit(s, alg); err == nil {
			r.Limits = append(r.Limits, l)
		}
	}
	if rc.RetryAfter != "" {
		r.RetryAfter, _ = config.ParseRetryAfter(rc.RetryAfter)
	}
	for _, s := range rc.Candidates {
		if l, err := config.ParseLimit(s, alg); err == nil {
			r.Candidates = append(r.Candidates, l)
		}
	}
	if rc.Ban != "" {
		r.Ban, _ = config.ParseBan(rc.Ban)
	}
	r.MaxInflight, r.MaxInflightPerKey = int64(rc.MaxInflight), int64(rc.MaxInflightPerKey)
	policy := rc.FailurePolicy
	if policy == "" {
		policy = f.Config.Store.FailurePolicy
	}
	r.FailClosed = policy == config.FailClosed
	r.capKey = "rule\x1f" + r.Name
	r.Cost, r.CostHeader, _ = config.ParseCost(rc.Cost)
	r.scale = 1
	if r.Cost == config.CostUpstreamSeconds {
		r.scale = 1000 // charged in milliseconds
	}
	for j, l := range r.Limits {
		// upstream_seconds are counted in milliseconds: the store's limit
		// must hold the count a thousand times over.
		sl := l
		sl.Count *= r.scale
		if err := sl.Validate(); err != nil || sl.Count/r.scale != l.Count {
			problems = append(problems, f.Problem(path+".limits["+strconv.Itoa(j)+"]", fmt.Sprintf(
				"%d upstream-seconds is %d ms, more than a %s limit can count (%d ms a window); use a smaller budget or algorithm: gcra",
				l.Count, sl.Count, l.Algorithm, int64(ratelimit.MaxWindowCount))))
		}
		r.storeLims = append(r.storeLims, sl)
	}
	if w := strings.TrimSpace(rc.CountWhen); w != "" {
		prg, err := compileExpr(respEnv, w, cel.BoolType)
		if err != nil {
			problems = append(problems, f.Problem(path+".count_when", celHint(err.Error(), w)))
		}
		r.countWhen = prg
	}
	r.deferred = r.countWhen != nil || r.Cost != config.CostRequests
	r.needsResponse = NeedsResponse(&rc) != ""
	if r.deferred && len(r.Candidates) > 0 {
		problems = append(problems, f.Problem(path+".candidates", "candidates count requests: they cannot be used with count_when or a cost yet"))
	}
	if r.Action == Block || r.Action == Count {
		var spec []string
		for j, k := range rc.Key {
			kp, err := config.ParseKey(k)
			if err != nil {
				continue
			}
			part := keyPart{kind: kp.Kind, arg: kp.Arg}
			if kp.Kind == config.KeyExpr {
				part.prg, err = compileExpr(env, kp.Arg, nil)
				if err != nil {
					problems = append(problems, f.Problem(path+".key["+strconv.Itoa(j)+"]", withResponseHint(err, kp.Arg)))
					continue
				}
			}
			r.parts = append(r.parts, part)
			spec = append(spec, kp.String())
			r.needsSession = r.needsSession || kp.Kind == config.KeySession
			r.needsClient = r.needsClient || kp.Kind == config.KeyAPIClient
		}
		r.KeyType = keyType(r.parts, spec)
		// The rule's name is in every counter key, so a rule's counters
		// are its own whatever routes it covers, and two rules never
		// share one. The full key spec is too, so changing what a rule
		// counts by starts it afresh after a reload.
		r.prefix = r.Name + "\x1f" + strings.Join(spec, "\x1e") + "\x1f"
	}
	return r, problems
}

// Condition is a compiled CEL condition over the request model, for
// settings outside rules (sessions.issue_when).
type Condition struct{ c *condition }

// CompileCondition compiles a boolean CEL condition over the request
// model. "" and "true" compile to a condition that always holds.
func CompileCondition(src string) (Condition, error) {
	if w := strings.TrimSpace(src); w == "" || w == "true" {
		return Condition{}, nil
	}
	env, err := NewEnv()
	if err != nil {
		return Condition{}, err
	}
	c, err := newCondition(env, src, nil)
	return Condition{c}, err
}

// Holds reports whether the condition holds for req; an evaluation error
// counts as false.
func (c Condition) Holds(req *Request) bool {
	if c.c == nil {
		return true
	}
	b, err := c.c.eval(req)
	return err == nil && b
}

// NeedsResponse says why a rule cannot be enforced by a decision made
// before the request is forwarded (the decision listener), or returns ""
// when it can. A concurrency cap holds its slot until the response, which
// the decision listener never sees end; count_when and costs other than
// requests count after the response. Such rules are skipped there.
func NeedsResponse(rc *config.Rule) string {
	switch {
	case rc.MaxInflight > 0 || rc.MaxInflightPerKey > 0:
		return "a concurrency cap holds its slot until the response, whose end the proxy does not report"
	case strings.TrimSpace(rc.CountWhen) != "":
		return "count_when reads the response, which the proxy does not report"
	case rc.Cost != "" && rc.Cost != config.CostRequests:
		return "cost " + rc.Cost + " is measured on the response, which the proxy does not report"
	}
	return ""
}

// HasCountWhen reports whether the rule counts only responses matching a
// count_when condition.
func (r *Rule) HasCountWhen() bool { return r.countWhen != nil }

// keyType names a key for logs and metrics: its characteristics joined by
// "+", with an expression written as "expr" (its source may be long).
func keyType(parts []keyPart, spec []string) string {
	if len(parts) == 0 {
		return "global"
	}
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = spec[i]
		if p.kind == config.KeyExpr {
			names[i] = "expr"
		} else if p.kind == config.KeyHeader {
			names[i] = "header:" + strings.ToLower(p.arg)
		}
	}
	return strings.Join(names, "+")
}

// withResponseHint returns err's text, adding where the response can be
// read when err is about an expression that reads it before there is one
// (when: "response.status == 401" for failed logins), or else celHint's.
func withResponseHint(err error, src string) string {
	msg := err.Error()
	if strings.Contains(msg, "undeclared reference to 'response") {
		return msg + "; a request's conditions and keys are decided before it is forwarded: count on the response with count_when, such as count_when: \"response.status == 401\""
	}
	return celHint(msg, src)
}

// fieldFor names the variable of the request model for the names other
// gateways and frameworks give it.
var fieldFor = map[string]string{
	"request.ip": "client.ip", "request.remote_addr": "client.ip", "request.remote_ip": "client.ip",
	"request.client_ip": "client.ip", "request.addr": "client.ip", "client.address": "client.ip", "client.addr": "client.ip",
	"request.url": "request.path (the query is request.query)", "request.uri": "request.path (the query is request.query)",
	"request.route": "route.name", "request.status": "response.status, in count_when",
	"request.ua": "request.user_agent", "request.useragent": "request.user_agent", "request.agent": "request.user_agent",
}

// undeclaredAt matches cel-go's "undeclared reference" problem, with the
// column of the name in the source.
var undeclaredAt = regexp.MustCompile(`^CEL: at 1:(\d+): undeclared reference to '([^']*)'`)

// celGuess is cel-go's suggestion after an undeclared reference.
var celGuess = regexp.MustCompile(` \(did you mean '[^']*'\?\)`)

// fieldAt returns the dotted name that starts at 1-based column col of
// src: what cel-go's "undeclared reference to 'request'" was written as.
func fieldAt(src string, col int) string {
	if col < 1 || col > len(src) {
		return ""
	}
	end := col - 1
	for end < len(src) && (src[end] == '.' || src[end] == '_' || 'a' <= src[end] && src[end] <= 'z' || 'A' <= src[end] && src[end] <= 'Z' || '0' <= src[end] && src[end] <= '9') {
		end++
	}
	return src[col-1 : end]
}

// bareWord matches cel-go's complaint about an upper-case name that is
// no variable of the request model: a method or other text written
// without quotes (request.method == POST).
var bareWord = regexp.MustCompile(`undeclared reference to '([A-Z][A-Z0-9_]*)'`)

// celHint returns msg, a CEL problem, with what to write instead when it
// is one of the mistakes people bring from other languages: a string
// without quotes, a number compared with a string, and, or and = for &&,
// || and ==.
func celHint(msg, src string) string {
	if m := undeclaredAt.FindStringSubmatch(msg); m != nil {
		col, _ := strconv.Atoi(m[1])
		name := m[2]
		if !strings.Contains(name, ".") {
			name = fieldAt(src, col) // cel-go names only the unknown root
		}
		if want, ok := fieldFor[strings.ToLower(name)]; ok {
			// cel-go's guess goes by spelling, ours by meaning.
			msg = celGuess.ReplaceAllString(msg, "")
			return msg + "; the request model calls it " + want + " (docs/rules.md, The request model)"
		}
	}
	switch {
	case strings.Contains(msg, "applied to '(string, int)'"), strings.Contains(msg, "applied to '(int, string)'"):
		return msg + "; a number never compares with a string: response.status is an int (401, not '401'), and request values are strings ('50', or int(request.query['page_size']) > 50)"
	case strings.Contains(msg, "mismatched input 'and'"), strings.Contains(msg, "mismatched input 'or'"),
		strings.Contains(msg, "mismatched input 'AND'"), strings.Contains(msg, "mismatched input 'OR'"):
		return msg + "; CEL writes and, or and not as &&, || and !"
	case strings.Contains(msg, "token recognition error at: '= '"), strings.Contains(msg, "token recognition error at: '='"):
		return msg + "; compare with =="
	}
	if m := bareWord.FindStringSubmatch(msg); m != nil {
		return msg + "; to compare with the text " + m[1] + ", quote it: '" + m[1] + "'"
	}
	return msg
}

// compileExpr parses and type-checks src; want nil accepts string, int,
// uint and bool results (key expressions).
func compileExpr(env *cel.Env, src string, want *cel.Type) (cel.Program, error) {
	_, prg, err := checkExpr(env, src, want)
	return prg, err
}

// checkExpr is compileExpr, also returning the checked expression.
func checkExpr(env *cel.Env, src string, want *cel.Type) (*cel.Ast, cel.Program, error) {
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, nil, fmt.Errorf("CEL: %s", oneLine(iss.Err().Error()))
	}
	if err := checkHeaderNames(ast); err != nil {
		return nil, nil, err
	}
	out := ast.OutputType()
	if want != nil {
		if !out.IsExactType(want) {
			return nil, nil, fmt.Errorf("CEL: expression has type %s, want %s", out, want)
		}
	} else if !out.IsExactType(cel.StringType) && !out.IsExactType(cel.IntType) &&
		!out.IsExactType(cel.UintType) && !out.IsExactType(cel.BoolType) {
		return nil, nil, fmt.Errorf("CEL: key expression has type %s, want string, int, uint or bool", out)
	}
	prg, err := env.Program(ast, append([]cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}, regexOptions...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("CEL: %s", oneLine(err.Error()))
	}
	return ast, prg, nil
}

// oneLine folds cel-go's multi-line error (message, source line, caret)
// into one line, keeping the message and its column.
func oneLine(s string) string {
	var msgs []string
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if m, ok := strings.CutPrefix(line, "ERROR: <input>:"); ok {
			msgs = append(msgs, "at "+m)
		}
	}
	if len(msgs) == 0 {
		return strings.Join(strings.Fields(s), " ")
	}
	return strings.Join(msgs, "; ")
}

// keyValue renders a key-expression result.
func keyValue(v any) string {
	switch v := v.(type) {
	case types.String:
		return string(v)
	case types.Int:
		return strconv.FormatInt(int64(v), 10)
	case types.Uint:
		return strconv.FormatUint(uint64(v), 10)
	case types.Bool:
		return strconv.FormatBool(bool(v))
	}
	return fmt.Sprint(v)
}
