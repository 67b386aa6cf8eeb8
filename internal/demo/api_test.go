package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"

	"github.com/floodgate/floodgate/internal/forward"
	"github.com/floodgate/floodgate/internal/upstreamauth"
)

const (
	testClientID     = "frontend"
	testClientSecret = "s3cr+t/=&x" // characters that Basic auth must form-encode
)

// answer is the part of MediaAPI's JSON answers the tests read.
type answer struct {
	AccessToken string   `json:"access_token"`
	TokenType   string   `json:"token_type"`
	ExpiresIn   int      `json:"expires_in"`
	Scope       string   `json:"scope"`
	Error       string   `json:"error"`
	Detail      any      `json:"detail"`
	ResultCount int      `json:"result_count"`
	PageCount   int      `json:"page_count"`
	PageSize    int      `json:"page_size"`
	Page        int      `json:"page"`
	Results     []result `json:"results"`
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Received    Received `json:"_received"`
}

type result struct {
	ID             string `json:"id"`
	Title          string `json:"title"`
	Creator        string `json:"creator"`
	License        string `json:"license"`
	LicenseVersion string `json:"license_version"`
	URL            string `json:"url"`
	Thumbnail      string `json:"thumbnail"`
	Tags           []tag  `json:"tags"`
}

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func newAPI(t *testing.T, o APIOptions) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(MediaAPI(o))
	t.Cleanup(s.Close)
	return s
}

// do sends req and decodes the JSON answer, failing the test on anything
// but a JSON answer.
func do(t *testing.T, s *httptest.Server, req *http.Request) (int, answer) {
	t.Helper()
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", req.Method, req.URL, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type = %q, want application/json", req.Method, req.URL, ct)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%s %s: body %q is not JSON: %v", req.Method, req.URL, body, err)
	}
	return resp.StatusCode, a
}

// get sends GET path (with query) to s, with token as a bearer token if
// not empty.
func get(t *testing.T, s *httptest.Server, path, token string) (int, answer) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, s, req)
}

// tokenRequest builds a token request with form and, if basic, Basic auth.
func tokenRequest(t *testing.T, s *httptest.Server, form url.Values, basic *[2]string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+TokenPath, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic != nil {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	return req
}

// issueToken gets a token from s with the test credentials.
func issueToken(t *testing.T, s *httptest.Server) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {testClientID}, "client_secret": {testClientSecret}}
	status, a := do(t, s, tokenRequest(t, s, form, nil))
	if status != http.StatusOK || a.AccessToken == "" {
		t.Fatalf("token request = %d %+v, want 200 with a token", status, a)
	}
	return a.AccessToken
}

func TestToken(t *testing.T) {
	creds := func(id, secret string) url.Values {
		return url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}
	}
	tests := []struct {
		name      string
		open      bool // ClientID empty
		method    string
		form      url.Values
		basic     *[2]string
		rawBasic  bool // send Basic credentials without form-encoding them
		wantCode  int
		wantError string
	}{
		{name: "body", form: creds(testClientID, testClientSecret), wantCode: 200},
		{name: "basic", form: url.Values{"grant_type": {"client_credentials"}}, basic: &[2]string{testClientID, testClientSecret}, wantCode: 200},
		{name: "basic not form-encoded", form: url.Values{"grant_type": {"client_credentials"}}, basic: &[2]string{testClientID, testClientSecret}, rawBasic: true, wantCode: 200},
		{name: "wrong secret", form: creds(testClientID, "nope"), wantCode: 401, wantError: "invalid_client"},
		{name: "wrong id", form: creds("someone", testClientSecret), wantCode: 401, wantError: "invalid_client"},
		{name: "secret prefix", form: creds(testClientID, testClientSecret[:3]), wantCode: 401, wantError: "invalid_client"},
		{name: "no credentials", form: url.Values{"grant_type": {"client_credentials"}}, wantCode: 401, wantError: "invalid_client"},
		{name: "wrong basic", form: url.Values{"grant_type": {"client_credentials"}}, basic: &[2]string{testClientID, "nope"}, wantCode: 401, wantError: "invalid_client"},
		{name: "basic and body", form: creds(testClientID, testClientSecret), basic: &[2]string{testClientID, testClientSecret}, wantCode: 400, wantError: "invalid_request"},
		{name: "other grant", form: url.Values{"grant_type": {"password"}, "client_id": {testClientID}, "client_secret": {testClientSecret}}, wantCode: 400, wantError: "unsupported_grant_type"},
		{name: "no grant", form: url.Values{"client_id": {testClientID}, "client_secret": {testClientSecret}}, wantCode: 400, wantError: "invalid_request"},
		{name: "GET", method: http.MethodGet, form: creds(testClientID, testClientSecret), wantCode: 405, wantError: "invalid_request"},
		{name: "no client registered", open: true, form: creds(testClientID, testClientSecret), wantCode: 401, wantError: "invalid_client"},
		{name: "no client registered, empty credentials", open: true, form: creds("", ""), wantCode: 401, wantError: "invalid_client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := APIOptions{ClientID: testClientID, ClientSecret: testClientSecret}
			if tt.open {
				o = APIOptions{}
			}
			s := newAPI(t, o)
			req := tokenRequest(t, s, tt.form, tt.basic)
			if tt.rawBasic {
				req.SetBasicAuth(tt.basic[0], tt.basic[1])
			}
			if tt.method != "" {
				req.Method = tt.method
			}
			status, a := do(t, s, req)
			if status != tt.wantCode || a.Error != tt.wantError {
				t.Fatalf("token = %d error %q, want %d error %q", status, a.Error, tt.wantCode, tt.wantError)
			}
			if status != http.StatusOK {
				if a.AccessToken != "" {
					t.Errorf("failed token request answered access_token %q", a.AccessToken)
				}
				return
			}
			if len(a.AccessToken) < 20 || a.TokenType != "Bearer" || a.ExpiresIn != 36000 || a.Scope != "read write" {
				t.Errorf("token answer = %+v, want a token, Bearer, 36000, read write", a)
			}
		})
	}
}

func TestTokensAreDistinct(t *testing.T) {
	s := newAPI(t, APIOptions{ClientID: testClientID, ClientSecret: testClientSecret})
	seen := make(map[string]bool)
	for range 20 {
		tok := issueToken(t, s)
		if seen[tok] {
			t.Fatalf("token %q issued twice", tok)
		}
		seen[tok] = true
	}
}

func TestMediaNeedsToken(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := newAPI(t, APIOptions{ClientID: testClientID, ClientSecret: testClientSecret, Now: c.Now})
	tok := issueToken(t, s)
	paths := []string{"/v1/images/?q=cat", "/v1/audio/", "/v1/images/" + ExampleImageID + "/", "/v1/audio/" + ExampleAudioID + "/related/"}
	for _, p := range paths {
		for _, tc := range []struct {
			token string
			want  int
		}{{"", 401}, {"not-a-token", 401}, {tok, 200}} {
			status, a := get(t, s, p, tc.token)
			if status != tc.want || a.Received.Authorized != (tc.want == 200) {
				t.Errorf("GET %s with token %q = %d authorized %v, want %d", p, tc.token, status, a.Received.Authorized, tc.want)
			}
		}
	}

	c.t = c.t.Add(TokenLifetime - time.Second)
	if status, _ := get(t, s, "/v1/images/", tok); status != 200 {
		t.Errorf("GET with a token 1s before expiry = %d, want 200", status)
	}
	c.t = c.t.Add(time.Second)
	if status, _ := get(t, s, "/v1/images/", tok); status != 401 {
		t.Errorf("GET with an expired token = %d, want 401", status)
	}
}

func TestTokenStoreIsBounded(t *testing.T) {
	s := newAPI(t, APIOptions{ClientID: testClientID, ClientSecret: testClientSecret})
	first := issueToken(t, s)
	second := issueToken(t, s)
	var last string
	for range maxTokens - 1 {
		last = issueToken(t, s)
	}
	for _, tc := range []struct {
		name, token string
		want        int
	}{{"oldest, forgotten", first, 401}, {"second", second, 200}, {"newest", last, 200}} {
		if status, _ := get(t, s, "/v1/images/", tc.token); status != tc.want {
			t.Errorf("%s token after %d more: GET = %d, want %d", tc.name, maxTokens, status, tc.want)
		}
	}
}

func TestAnonymous(t *testing.T) {
	s := newAPI(t, APIOptions{})
	for _, tok := range []string{"", "made-up"} {
		status, a := get(t, s, "/v1/images/?q=cat", tok)
		if status != 200 || a.ResultCount == 0 || a.Received.Authorized {
			t.Errorf("anonymous GET with token %q = %d, %d results, authorized %v; want 200, results, not authorized", tok, status, a.ResultCount, a.Received.Authorized)
		}
	}
}

// TestUpstreamAuth drives the API with the gateway's own token client, in
// both of its ways of sending credentials.
func TestUpstreamAuth(t *testing.T) {
	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInParams, oauth2.AuthStyleInHeader} {
		t.Run(fmt.Sprint(style), func(t *testing.T) {
			s := newAPI(t, APIOptions{ClientID: testClientID, ClientSecret: testClientSecret})
			tokenURL, err := upstreamauth.TokenURL(s.URL)
			if err != nil {
				t.Fatal(err)
			}
			src, err := upstreamauth.New(upstreamauth.Options{TokenURL: tokenURL, ClientID: testClientID, ClientSecret: testClientSecret, AuthStyle: style, HTTPClient: s.Client()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := src.Token(context.Background()); err != nil {
				t.Fatalf("Token: %v", err)
			}
			// The gateway's way to an http upstream: the lean forwarder.
			u, _ := url.Parse(s.URL)
			f, err := forward.New(u, forward.Options{Credential: upstreamauth.Bearer(src), OnError: func(w http.ResponseWriter, r *http.Request, err error) {
				t.Errorf("forwarding: %v", err)
				w.WriteHeader(http.StatusBadGateway)
			}})
			if err != nil {
				t.Fatal(err)
			}
			gw := httptest.NewServer(f)
			defer gw.Close()
			defer f.CloseIdle()
			req, _ := http.NewRequest(http.MethodGet, gw.URL+"/v1/images/?q=cat", nil)
			req.Header.Set("Cookie", "ovSession=abc")
			resp, err := gw.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var a answer
			if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || !a.Received.Authorized || a.Received.CookieSent {
				t.Errorf("search through upstreamauth = %d %+v, want 200, authorized, no cookie", resp.StatusCode, a.Received)
			}
		})
	}
}

func ids(rs []result) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func catalogueIDs(kind string, idx ...int) []string {
	out := []string{}
	for _, i := range idx {
		out = append(out, catalogue[kind][i].ID)
	}
	return out
}

func TestSearch(t *testing.T) {
	s := newAPI(t, APIOptions{})
	tests := []struct {
		path                     string
		wantCount, wantPageCount int
		wantPage, wantPageSize   int
		wantIDs                  []string
	}{
		{"/v1/images/?q=cat", 3, 1, 1, 20, catalogueIDs(images, 0, 1, 8)},
		{"/v1/images/?q=CAT", 3, 1, 1, 20, catalogueIDs(images, 0, 1, 8)},
		{"/v1/images/?q=kitten", 1, 1, 1, 20, catalogueIDs(images, 8)},  // a tag
		{"/v1/images/?q=red+fox", 1, 1, 1, 20, catalogueIDs(images, 2)}, // every word
		{"/v1/images/?q=red+whale", 0, 0, 1, 20, []string{}},            // one word missing
		{"/v1/images/?q=Okafor", 0, 0, 1, 20, []string{}},               // creators are not searched
		{"/v1/audio/?q=cat", 1, 1, 1, 20, []string{ExampleAudioID}},     // the other media type
		{"/v1/audio?q=cat", 1, 1, 1, 20, []string{ExampleAudioID}},      // trailing slash optional
		{"/v1/images/", 12, 1, 1, 20, catalogueIDs(images, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{"/v1/images/?page_size=5", 12, 3, 1, 5, catalogueIDs(images, 0, 1, 2, 3, 4)},
		{"/v1/images/?page_size=5&page=3", 12, 3, 3, 5, catalogueIDs(images, 10, 11)},
		{"/v1/images/?page_size=5&page=4", 12, 3, 4, 5, []string{}},
		{"/v1/images/?page=9223372036854775807&page_size=500", 12, 1, 9223372036854775807, 500, []string{}},
		{"/v1/images/?page=&page_size=", 12, 1, 1, 20, catalogueIDs(images, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)},
		{"/v1/images/?license=cc0", 2, 1, 1, 20, catalogueIDs(images, 2, 8)},
		{"/v1/images/?license=CC0,pdm&q=cat", 1, 1, 1, 20, catalogueIDs(images, 8)},
		{"/v1/images/?license_type=commercial,modification&q=cat", 3, 1, 1, 20, catalogueIDs(images, 0, 1, 8)},
		{"/v1/images/?license_type=commercial&q=night", 0, 0, 1, 20, []string{}},
		{"/v1/audio/?category=music", 2, 1, 1, 20, catalogueIDs(audio, 3, 5)},
		{"/v1/audio/?source=jamendo&excluded_source=jamendo", 0, 0, 1, 20, []string{}},
		{"/v1/images/?extension=svg", 1, 1, 1, 20, catalogueIDs(images, 6)},
		{"/v1/images/?q=cat&mature=true&peaks=true", 3, 1, 1, 20, catalogueIDs(images, 0, 1, 8)}, // unknown parameters ignored
	}
	for _, tt := range tests {
		status, a := get(t, s, tt.path, "")
		if status != 200 {
			t.Errorf("GET %s = %d, want 200", tt.path, status)
			continue
		}
		if a.ResultCount != tt.wantCount || a.PageCount != tt.wantPageCount || a.Page != tt.wantPage || a.PageSize != tt.wantPageSize {
			t.Errorf("GET %s: result_count %d page_count %d page %d page_size %d, want %d %d %d %d", tt.path,
				a.ResultCount, a.PageCount, a.Page, a.PageSize, tt.wantCount, tt.wantPageCount, tt.wantPage, tt.wantPageSize)
		}
		if diff := cmp.Diff(ids(a.Results), tt.wantIDs); diff != "" {
			t.Errorf("GET %s: result ids (-got +want):\n%s", tt.path, diff)
		}
	}
}

func TestRecordShape(t *testing.T) {
	s := newAPI(t, APIOptions{})
	_, a := get(t, s, "/v1/images/?q=ginger", "")
	if len(a.Results) != 1 {
		t.Fatalf("q=ginger: %d results, want 1", len(a.Results))
	}
	want := result{
		ID:             ExampleImageID,
		Title:          "Ginger cat asleep on a windowsill",
		Creator:        "Mara Okafor",
		License:        "by",
		LicenseVersion: "2.0",
		URL:            "https://media.example/images/" + ExampleImageID + ".jpg",
		Tags:           []tag{{"cat"}, {"animal"}, {"window"}, {"sleep"}},
	}
	got := a.Results[0]
	if !strings.HasPrefix(got.Thumbnail, "data:image/svg+xml;base64,") {
		t.Errorf("thumbnail = %.40q…, want a data: URL of an SVG", got.Thumbnail)
	}
	got.Thumbnail = ""
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("record (-got +want):\n%s", diff)
	}
}

// TestCatalogue checks the fixed data: unique UUID ids, a thumbnail each.
func TestCatalogue(t *testing.T) {
	seen := make(map[string]bool)
	for kind, n := range map[string]int{images: 12, audio: 8} {
		if len(catalogue[kind]) != n {
			t.Errorf("%d %s, want %d", len(catalogue[kind]), kind, n)
		}
		for _, m := range catalogue[kind] {
			if !isUUID(m.ID) || seen[m.ID] {
				t.Errorf("%s %q: id %q is not a new UUID", kind, m.Title, m.ID)
			}
			seen[m.ID] = true
			if !strings.HasPrefix(m.Thumbnail, "data:image/svg+xml;base64,") {
				t.Errorf("%s %q: thumbnail %.30q…", kind, m.Title, m.Thumbnail)
			}
		}
	}
	if find(images, ExampleImageID) == nil || find(audio, ExampleAudioID) == nil {
		t.Error("ExampleImageID or ExampleAudioID is not in the catalogue")
	}
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
	}
	return true
}

func TestSingleAndRelated(t *testing.T) {
	s := newAPI(t, APIOptions{})
	status, a := get(t, s, "/v1/images/"+ExampleImageID+"/", "")
	if status != 200 || a.ID != ExampleImageID || a.Title != "Ginger cat asleep on a windowsill" {
		t.Errorf("GET image = %d id %q title %q, want 200 %s", status, a.ID, a.Title, ExampleImageID)
	}
	status, a = get(t, s, "/v1/audio/"+ExampleAudioID, "")
	if status != 200 || a.ID != ExampleAudioID {
		t.Errorf("GET audio = %d id %q, want 200 %s", status, a.ID, ExampleAudioID)
	}

	status, a = get(t, s, "/v1/images/"+ExampleImageID+"/related/", "")
	if status != 200 || len(a.Results) == 0 || len(a.Results) > maxRelated || a.ResultCount != len(a.Results) {
		t.Fatalf("GET related = %d with %d results (result_count %d), want 200 with 1–%d", status, len(a.Results), a.ResultCount, maxRelated)
	}
	for _, r := range a.Results {
		if r.ID == ExampleImageID || find(images, r.ID) == nil {
			t.Errorf("related result %q is the record itself or not an image", r.ID)
		}
	}
	// The black cat shares two tags (cat, animal), more than any other.
	if diff := cmp.Diff(ids(a.Results[:1]), catalogueIDs(images, 1)); diff != "" {
		t.Errorf("first related ids (-got +want):\n%s", diff)
	}
}

func TestNotFound(t *testing.T) {
	s := newAPI(t, APIOptions{ClientID: testClientID, ClientSecret: testClientSecret})
	tok := issueToken(t, s)
	for _, p := range []string{
		"/",
		"/v1/",
		"/v1/video/",
		"/v2/images/",
		"/v1/images//",
		"/v1/images/not-a-uuid/",
		"/v1/images/" + ExampleAudioID + "/", // an audio id as an image
		"/v1/audio/" + ExampleImageID + "/related/", // and the other way round
		"/v1/images/00000000-0000-0000-0000-000000000000/",
		"/v1/images/" + ExampleImageID + "/thumb/",
		"/v1/images/" + ExampleImageID + "/related/more/",
		"/v1/images/%2e%2e/",
		"/v1/auth_tokens/token",
		"/api/search/image",
	} {
		status, a := get(t, s, p, tok)
		if status != 404 || a.Detail != "Not found." {
			t.Errorf("GET %s = %d detail %v, want 404 Not found.", p, status, a.Detail)
		}
	}
}

func TestMethods(t *testing.T) {
	s := newAPI(t, APIOptions{})
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, s.URL+"/v1/images/", nil)
		status, _ := do(t, s, req)
		if status != 405 {
			t.Errorf("%s /v1/images/ = %d, want 405", m, status)
		}
	}
	req, _ := http.NewRequest(http.MethodHead, s.URL+"/v1/images/", nil)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("HEAD /v1/images/ = %d, want 200", resp.StatusCode)
	}
}

func TestReceived(t *testing.T) {
	s := newAPI(t, APIOptions{ClientID: testClientID, ClientSecret: testClientSecret})
	tok := issueToken(t, s)
	tests := []struct {
		name   string
		path   string
		token  string
		cookie string
		want   Received
	}{
		{"search", "/v1/images/?q=cat&page_size=20&unknown=1", tok, "",
			Received{Method: "GET", Path: "/v1/images/", Query: "q=cat&page_size=20&unknown=1", Authorized: true}},
		{"cookie", "/v1/audio/", tok, "ovSession=abc; ov_theme=light",
			Received{Method: "GET", Path: "/v1/audio/", Authorized: true, CookieSent: true}},
		{"unauthorized", "/v1/images/?q=x", "", "a=b",
			Received{Method: "GET", Path: "/v1/images/", Query: "q=x", CookieSent: true}},
		{"not found", "/elsewhere?x=%20y", tok, "",
			Received{Method: "GET", Path: "/elsewhere", Query: "x=%20y", Authorized: true}},
		{"single", "/v1/images/" + ExampleImageID + "/", tok, "",
			Received{Method: "GET", Path: "/v1/images/" + ExampleImageID + "/", Authorized: true}},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, s.URL+tt.path, nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		if tt.cookie != "" {
			req.Header.Set("Cookie", tt.cookie)
		}
		_, a := do(t, s, req)
		if diff := cmp.Diff(a.Received, tt.want); diff != "" {
			t.Errorf("%s: _received (-got +want):\n%s", tt.name, diff)
		}
	}

	// The token endpoint reports too, but never what was in the body.
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {testClientID}, "client_secret": {testClientSecret}}
	req := tokenRequest(t, s, form, nil)
	req.Header.Set("Cookie", "x=y")
	_, a := do(t, s, req)
	want := Received{Method: "POST", Path: TokenPath, CookieSent: true}
	if diff := cmp.Diff(a.Received, want); diff != "" {
		t.Errorf("token _received (-got +want):\n%s", diff)
	}
}

// hostile are queries (after "?") of hostile or malformed input; the
// answer is always JSON, never a 5xx. They seed FuzzMediaAPI.
var hostile = []struct {
	query string
	want  int
}{
	{"q=" + strings.Repeat("a", 100_000), 400},
	{"q=" + strings.Repeat("é", 200), 200},
	{"q=" + strings.Repeat("é", 201), 400},
	{"q=" + strings.Repeat("a+", 5000), 400},
	{"page=-1", 400},
	{"page=0", 400},
	{"page=abc", 400},
	{"page=99999999999999999999", 400},
	{"page=9223372036854775807", 200},
	{"page=-9223372036854775808", 400},
	{"page=1e3", 400},
	{"page=+2", 400}, // "+" is a space
	{"page=%2B2", 200},
	{"page=%201", 400},
	{"page_size=-1", 400},
	{"page_size=0", 400},
	{"page_size=501", 400},
	{"page_size=500&page=2", 200},
	{"page_size=99999999999999999999", 400},
	{"page=1&page=abc", 200},
	{"q=%zz&page=2", 200},
	{"q=%00%ff%fe", 200},
	{"q=<script>alert(1)</script>", 200},
	{"q=%E2%80%AE", 200},
	{"license=,,,&license_type=,&source=%00", 200},
	{"license=" + strings.Repeat("by,", 10_000), 200},
	{";;;&&&===", 200},
}

func TestHostileQueries(t *testing.T) {
	s := newAPI(t, APIOptions{})
	for _, tt := range hostile {
		for _, kind := range []string{images, audio} {
			status, a := get(t, s, "/v1/"+kind+"/?"+tt.query, "")
			if status != tt.want {
				t.Errorf("GET /v1/%s/?%.60s = %d (detail %v), want %d", kind, tt.query, status, a.Detail, tt.want)
			}
		}
	}
}

// checkAnswer fails t unless rec holds a JSON answer with a 2xx or 4xx
// status and a _received field.
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 || rec.Code < 200 || rec.Code >= 300 && rec.Code < 400 {
		t.Fatalf("status %d, want 2xx or 4xx", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("body is not a JSON object: %v", err)
	}
	if _, ok := v["_received"]; !ok {
		t.Fatalf("answer without _received: %.200s", rec.Body.String())
	}
}

func FuzzMediaAPI(f *testing.F) {
	for _, tt := range hostile {
		f.Add("/v1/images/", tt.query)
	}
	f.Add("/v1/audio/"+ExampleAudioID+"/related/", "q=cat")
	f.Add("/v1/images/"+ExampleImageID, "")
	f.Add("/v1/images/../audio/", "page=2")
	f.Add(TokenPath, "grant_type=client_credentials")
	h := MediaAPI(APIOptions{})
	f.Fuzz(func(t *testing.T, path, query string) {
		req := &http.Request{
			Method:     http.MethodGet,
			URL:        &url.URL{Path: path, RawQuery: query},
			Header:     http.Header{"Cookie": {"ovSession=abc"}},
			Proto:      "HTTP/1.1",
			ProtoMajor: 1,
			ProtoMinor: 1,
			Body:       http.NoBody,
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkAnswer(t, rec)
	})
}
