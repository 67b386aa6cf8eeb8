package demo

import (
	"cmp"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// TokenPath is the path of MediaAPI's token endpoint, as in the Openverse
// API.
const TokenPath = "/v1/auth_tokens/token/"

// TokenLifetime is how long MediaAPI accepts a token it issued; its token
// answers say so in expires_in (36000 seconds, as Openverse).
const TokenLifetime = 10 * time.Hour

const (
	// maxTokens bounds the tokens MediaAPI remembers; issuing one more
	// forgets the oldest.
	maxTokens = 256
	// maxTokenBody bounds a token request's form body.
	maxTokenBody = 64 << 10
	// defaultPageSize and maxPageSize bound page_size, as Openverse does
	// for authenticated clients.
	defaultPageSize = 20
	maxPageSize     = 500
	// maxQueryRunes bounds q, as Openverse does.
	maxQueryRunes = 200
	// maxRelated is how many records a related answer holds at most.
	maxRelated = 6
)

// APIOptions configure MediaAPI.
type APIOptions struct {
	// ClientID and ClientSecret are the one API application the token
	// endpoint knows. With ClientID empty the API runs unauthenticated,
	// like `floodgate`'s development environment: media requests need no
	// token and the token endpoint answers every client 401
	// invalid_client. With ClientID set, every media request needs
	// "Authorization: Bearer <token>" with a token issued for these
	// credentials and not older than TokenLifetime.
	ClientID, ClientSecret string
	// Now is the clock for token lifetimes; default time.Now.
	Now func() time.Time
}

// Received describes a request as MediaAPI received it. Every JSON answer
// of MediaAPI has one under the top-level key "_received".
type Received struct {
	Method string `json:"method"`
	// Path is the request's path, decoded.
	Path string `json:"path"`
	// Query is the raw query string, exactly as it arrived, without "?".
	Query string `json:"query"`
	// Authorized says whether the request carried a bearer token that
	// MediaAPI issued and that has not expired.
	Authorized bool `json:"authorized"`
	// CookieSent says whether the request carried any Cookie header.
	CookieSent bool `json:"cookie_sent"`
}

// mediaAPI is the handler MediaAPI returns.
type mediaAPI struct {
	id, secret []byte
	open       bool // no client registered: anonymous media requests
	now        func() time.Time

	mu     sync.Mutex
	tokens map[string]time.Time // issued token → expiry
	order  []string             // issued tokens; once full, a ring whose oldest is at next
	next   int
}

var _ http.Handler = (*mediaAPI)(nil)

// MediaAPI returns a small in-memory media API shaped like the Openverse
// API, over a fixed catalogue of 12 images and 8 audio records:
//
//	POST /v1/auth_tokens/token/          client credentials → bearer token
//	GET  /v1/{images|audio}/             search: q, page, page_size, license,
//	                                     license_type, source, excluded_source,
//	                                     extension, category
//	GET  /v1/{images|audio}/{id}/        one record, or 404
//	GET  /v1/{images|audio}/{id}/related/ up to 6 records of the same type
//
// The trailing slash is optional. Everything else is 404, a wrong method
// 405, an invalid page, page_size (1–500) or q (at most 200 characters)
// 400; every answer is JSON and carries "_received" (see Received). The
// token endpoint takes a form-encoded grant_type=client_credentials with
// client_id and client_secret in the body or in HTTP Basic authentication
// (form-encoded, RFC 6749 §2.3.1), and answers like Openverse:
// {"access_token", "token_type": "Bearer", "expires_in": 36000, "scope"};
// wrong credentials get 401 {"error": "invalid_client"}.
//
// The handler is safe for concurrent use.
func MediaAPI(o APIOptions) http.Handler {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &mediaAPI{
		id:     []byte(o.ClientID),
		secret: []byte(o.ClientSecret),
		open:   o.ClientID == "",
		now:    o.Now,
		tokens: make(map[string]time.Time),
	}
}

func (a *mediaAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, hasBearer := bearer(r.Header)
	rec := Received{
		Method:     r.Method,
		Path:       r.URL.Path,
		Query:      r.URL.RawQuery,
		Authorized: hasBearer && a.valid(tok),
		CookieSent: len(r.Header.Values("Cookie")) > 0,
	}
	if r.URL.Path == TokenPath {
		a.token(w, r, rec)
		return
	}
	kind, id, related, ok := route(r.URL.Path)
	if !ok {
		writeJSON(w, http.StatusNotFound, detail("Not found.", rec))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeJSON(w, http.StatusMethodNotAllowed, detail(fmt.Sprintf("Method %q not allowed.", r.Method), rec))
		return
	}
	if !a.open && !rec.Authorized {
		msg, challenge := "Authentication credentials were not provided.", `Bearer realm="api"`
		if hasBearer {
			msg, challenge = "Invalid or expired token.", `Bearer realm="api", error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		writeJSON(w, http.StatusUnauthorized, detail(msg, rec))
		return
	}
	switch {
	case id == "":
		search(w, r, kind, rec)
	case related:
		relatedTo(w, kind, id, rec)
	default:
		single(w, kind, id, rec)
	}
}

// route splits a media path: "/v1/images/" → images, "", false;
// "/v1/audio/{id}/related/" → audio, id, true. ok is false for any other
// path.
func route(path string) (kind, id string, related, ok bool) {
	rest, found := strings.CutPrefix(path, "/v1/")
	if !found {
		return "", "", false, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if parts[0] != images && parts[0] != audio {
		return "", "", false, false
	}
	switch {
	case len(parts) == 1:
		return parts[0], "", false, true
	case len(parts) == 2 && parts[1] != "":
		return parts[0], parts[1], false, true
	case len(parts) == 3 && parts[1] != "" && parts[2] == "related":
		return parts[0], parts[1], true, true
	}
	return "", "", false, false
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(h http.Header) (string, bool) {
	scheme, tok, ok := strings.Cut(h.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	return tok, ok && strings.EqualFold(scheme, "Bearer") && tok != ""
}

// valid reports whether tok was issued and has not expired.
func (a *mediaAPI) valid(tok string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.tokens[tok]
	return ok && a.now().Before(exp)
}

// issue makes, remembers and returns a new token, forgetting the oldest
// one if maxTokens are remembered.
func (a *mediaAPI) issue() string {
	tok := rand.Text()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.order) < maxTokens {
		a.order = append(a.order, tok)
	} else {
		delete(a.tokens, a.order[a.next])
		a.order[a.next] = tok
		a.next = (a.next + 1) % maxTokens
	}
	a.tokens[tok] = a.now().Add(TokenLifetime)
	return tok
}

// client reports whether id and secret are the registered client's.
func (a *mediaAPI) client(id, secret string) bool {
	if a.open {
		return false
	}
	idOK := subtle.ConstantTimeCompare([]byte(id), a.id)
	secretOK := subtle.ConstantTimeCompare([]byte(secret), a.secret)
	return idOK&secretOK == 1
}

// tokenAnswer is the token endpoint's success answer.
type tokenAnswer struct {
	AccessToken string   `json:"access_token"`
	TokenType   string   `json:"token_type"`
	ExpiresIn   int      `json:"expires_in"`
	Scope       string   `json:"scope"`
	Received    Received `json:"_received"`
}

// token answers the token endpoint (RFC 6749 §4.4, errors as §5.2).
func (a *mediaAPI) token(w http.ResponseWriter, r *http.Request, rec Received) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeJSON(w, http.StatusMethodNotAllowed, oauthError("invalid_request", "use POST", rec))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxTokenBody)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "the request is not a valid form", rec))
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	ok := a.client(id, secret)
	if bid, bsecret, basic := r.BasicAuth(); basic {
		if r.PostForm.Has("client_id") || r.PostForm.Has("client_secret") {
			writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "authenticate the client in one way only", rec))
			return
		}
		// RFC 6749 §2.3.1 form-encodes both before Basic; accept
		// clients that did not, too.
		ok = a.client(bid, bsecret) || a.client(formUnescape(bid), formUnescape(bsecret))
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="api"`)
		}
	}
	if !ok {
		writeJSON(w, http.StatusUnauthorized, oauthError("invalid_client", "", rec))
		return
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "client_credentials":
	case "":
		writeJSON(w, http.StatusBadRequest, oauthError("invalid_request", "grant_type is missing", rec))
		return
	default:
		writeJSON(w, http.StatusBadRequest, oauthError("unsupported_grant_type", "", rec))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, tokenAnswer{
		AccessToken: a.issue(),
		TokenType:   "Bearer",
		ExpiresIn:   int(TokenLifetime / time.Second),
		Scope:       "read write",
		Received:    rec,
	})
}

func formUnescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// searchAnswer is a page of records, for search and related answers.
type searchAnswer struct {
	ResultCount int      `json:"result_count"`
	PageCount   int      `json:"page_count"`
	PageSize    int      `json:"page_size"`
	Page        int      `json:"page"`
	Results     []*media `json:"results"`
	Warnings    []string `json:"warnings"`
	Received    Received `json:"_received"`
}

// search answers GET /v1/{kind}/.
func search(w http.ResponseWriter, r *http.Request, kind string, rec Received) {
	q := r.URL.Query()
	problems := make(map[string][]string)
	page := intParam(q, "page", 1, 1, int(^uint(0)>>1), problems)
	size := intParam(q, "page_size", defaultPageSize, 1, maxPageSize, problems)
	if utf8.RuneCountInString(q.Get("q")) > maxQueryRunes {
		problems["q"] = []string{fmt.Sprintf("Ensure this field has no more than %d characters.", maxQueryRunes)}
	}
	if len(problems) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": problems, "_received": rec})
		return
	}
	f := parseFilter(q)
	var matches []*media
	for _, m := range catalogue[kind] {
		if f.match(m) {
			matches = append(matches, m)
		}
	}
	ans := searchAnswer{
		ResultCount: len(matches),
		PageCount:   (len(matches) + size - 1) / size,
		PageSize:    size,
		Page:        page,
		Results:     []*media{},
		Warnings:    []string{},
		Received:    rec,
	}
	if page <= ans.PageCount { // also keeps (page-1)*size from overflowing
		start := (page - 1) * size
		ans.Results = matches[start:min(start+size, len(matches))]
	}
	writeJSON(w, http.StatusOK, ans)
}

// intParam returns the integer parameter name of q, def if it is absent
// or empty; a value that is not an integer in [lo, hi] is added to
// problems.
func intParam(q url.Values, name string, def, lo, hi int, problems map[string][]string) int {
	s := q.Get(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	switch {
	case err != nil:
		problems[name] = []string{"A valid integer is required."}
	case n < lo:
		problems[name] = []string{fmt.Sprintf("Ensure this value is greater than or equal to %d.", lo)}
	case n > hi:
		problems[name] = []string{fmt.Sprintf("Ensure this value is less than or equal to %d.", hi)}
	default:
		return n
	}
	return def
}

// filter is a search's conditions; a nil set means any value.
type filter struct {
	terms                       []string
	licenses, sources, excluded map[string]bool
	extensions, categories      map[string]bool
	commercial, modification    bool
}

func parseFilter(q url.Values) filter {
	f := filter{
		terms:      strings.Fields(strings.ToLower(q.Get("q"))),
		licenses:   set(q.Get("license")),
		sources:    set(q.Get("source")),
		excluded:   set(q.Get("excluded_source")),
		extensions: set(q.Get("extension")),
		categories: set(q.Get("category")),
	}
	lt := set(q.Get("license_type"))
	f.commercial, f.modification = lt["commercial"], lt["modification"]
	return f
}

// set returns the lower-cased items of a comma-separated list, or nil if
// there are none.
func set(list string) map[string]bool {
	var s map[string]bool
	for item := range strings.SplitSeq(list, ",") {
		if item = strings.ToLower(strings.TrimSpace(item)); item != "" {
			if s == nil {
				s = make(map[string]bool)
			}
			s[item] = true
		}
	}
	return s
}

// match reports whether m meets every condition of f. Each word of q must
// be a substring of the title or of a tag.
func (f filter) match(m *media) bool {
	for _, t := range f.terms {
		if !slices.ContainsFunc(m.search, func(s string) bool { return strings.Contains(s, t) }) {
			return false
		}
	}
	return (f.licenses == nil || f.licenses[m.License]) &&
		(f.sources == nil || f.sources[m.Source]) &&
		!f.excluded[m.Source] &&
		(f.extensions == nil || f.extensions[m.Filetype]) &&
		(f.categories == nil || f.categories[m.Category]) &&
		(!f.commercial || !strings.Contains(m.License, "nc")) &&
		(!f.modification || !strings.Contains(m.License, "nd"))
}

// singleAnswer is one record.
type singleAnswer struct {
	*media
	Received Received `json:"_received"`
}

// single answers GET /v1/{kind}/{id}/.
func single(w http.ResponseWriter, kind, id string, rec Received) {
	m := find(kind, id)
	if m == nil {
		writeJSON(w, http.StatusNotFound, detail("Not found.", rec))
		return
	}
	writeJSON(w, http.StatusOK, singleAnswer{m, rec})
}

// relatedTo answers GET /v1/{kind}/{id}/related/: other records of kind,
// those sharing the most tags with id first.
func relatedTo(w http.ResponseWriter, kind, id string, rec Received) {
	m := find(kind, id)
	if m == nil {
		writeJSON(w, http.StatusNotFound, detail("Not found.", rec))
		return
	}
	shared := func(o *media) int {
		n := 0
		for _, t := range o.Tags {
			if slices.Contains(m.Tags, t) {
				n++
			}
		}
		return n
	}
	var others []*media
	for _, o := range catalogue[kind] {
		if o != m {
			others = append(others, o)
		}
	}
	slices.SortStableFunc(others, func(a, b *media) int { return cmp.Compare(shared(b), shared(a)) })
	others = others[:min(maxRelated, len(others))]
	writeJSON(w, http.StatusOK, searchAnswer{
		ResultCount: len(others),
		PageCount:   1,
		PageSize:    maxRelated,
		Page:        1,
		Results:     others,
		Warnings:    []string{},
		Received:    rec,
	})
}

// detail is an error answer in the Openverse (Django REST framework) shape.
func detail(msg string, rec Received) map[string]any {
	return map[string]any{"detail": msg, "_received": rec}
}

// oauthError is an RFC 6749 §5.2 error answer.
func oauthError(code, description string, rec Received) map[string]any {
	v := map[string]any{"error": code, "_received": rec}
	if description != "" {
		v["error_description"] = description
	}
	return v
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only for a programming error: every answer is plain data
		status, body = http.StatusInternalServerError, []byte(`{"detail":"internal error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
