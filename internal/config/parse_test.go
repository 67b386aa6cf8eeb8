package config

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/ratelimit"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in      string
		want    KeyPart
		wantErr string
	}{
		{in: "ip", want: KeyPart{Kind: KeyIP}},
		{in: "path", want: KeyPart{Kind: KeyPath}},
		{in: "route", want: KeyPart{Kind: KeyRoute}},
		{in: "method", want: KeyPart{Kind: KeyMethod}},
		{in: "host", want: KeyPart{Kind: KeyHost}},
		{in: "session", want: KeyPart{Kind: KeySession}},
		{in: "api_client", want: KeyPart{Kind: KeyAPIClient}},
		{in: "header:x-api-key", want: KeyPart{Kind: KeyHeader, Arg: "X-Api-Key"}},
		{in: "query:page_size", want: KeyPart{Kind: KeyQuery, Arg: "page_size"}},
		{in: "query:a b", want: KeyPart{Kind: KeyQuery, Arg: "a b"}},
		{in: "expr: request.host ", want: KeyPart{Kind: KeyExpr, Arg: "request.host"}},
		{in: "expr:a:b", want: KeyPart{Kind: KeyExpr, Arg: "a:b"}},
		{in: "IP", wantErr: `unknown key kind "IP"`},
		{in: "", wantErr: `unknown key kind ""`},
		{in: "ip:4", wantErr: `key "ip:4": ip takes no argument`},
		{in: "header", wantErr: `key "header" needs an argument: header:NAME`},
		{in: "header:", wantErr: `key "header:": "" is not a header name`},
		{in: "header:a b", wantErr: `key "header:a b": "a b" is not a header name`},
		{in: "header: X-A", wantErr: `key "header: X-A": " X-A" is not a header name: write it without blanks, "header:X-A"`},
		{in: "header:X-A\t", wantErr: `key "header:X-A\t": "X-A\t" is not a header name: write it without blanks, "header:X-A"`},
		{in: "header: ", wantErr: `key "header: ": " " is not a header name`},
		{in: "query:", wantErr: `key "query:": "" is not a query parameter name`},
		{in: "query:a\x00", wantErr: `key "query:a\x00": "a\x00" is not a query parameter name`},
		{in: "expr: ", wantErr: `key "expr: ": the expression is empty`},
	}
	for _, tt := range tests {
		got, err := ParseKey(tt.in)
		if gotErr := errString(err); gotErr != tt.wantErr {
			t.Errorf("ParseKey(%q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseKey(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if err == nil {
			if again, err := ParseKey(got.String()); err != nil || again != got {
				t.Errorf("ParseKey(%q) = %+v, %v; want it to read back %+v", got.String(), again, err, got)
			}
		}
	}
}

func TestParseRoutePattern(t *testing.T) {
	tests := []struct {
		in      string
		want    Pattern
		params  []string
		wantErr string
	}{
		{in: "/", want: Pattern{}},
		{in: "/api", want: Pattern{Segments: []Segment{{Literal: "api"}}}},
		{in: "/api/", want: Pattern{Segments: []Segment{{Literal: "api"}}, TrailingSlash: true}},
		{
			in:     "/api/{type}/related/{id}",
			want:   Pattern{Segments: []Segment{{Literal: "api"}, {Param: "type"}, {Literal: "related"}, {Param: "id"}}},
			params: []string{"type", "id"},
		},
		{
			in:     "/files/{path...}",
			want:   Pattern{Segments: []Segment{{Literal: "files"}, {Param: "path", Rest: true}}},
			params: []string{"path"},
		},
		{in: "/variants/data", want: Pattern{Segments: []Segment{{Literal: "variants"}, {Literal: "data"}}}},
		{in: "", wantErr: `path "" must start with /`},
		{in: "api", wantErr: `path "api" must start with /`},
		{in: "/a//b", wantErr: `path "/a//b" has an empty segment (//)`},
		{in: "//", wantErr: `path "//" has an empty segment (//)`},
		{in: "/a/./b", wantErr: `path "/a/./b" has a "." segment`},
		{in: "/a/..", wantErr: `path "/a/.." has a ".." segment`},
		{in: "/{1a}", wantErr: `path "/{1a}": parameter name "1a" must be letters, digits and _, not starting with a digit`},
		{in: "/{}", wantErr: `path "/{}": parameter name "" must be letters, digits and _, not starting with a digit`},
		{in: "/{a}/{a}", wantErr: `path "/{a}/{a}": parameter {a} appears twice`},
		{in: "/{a...}/b", wantErr: `path "/{a...}/b": {a...} must be the last segment`},
		{in: "/{a...}/", wantErr: `path "/{a...}/": {a...} must be the last segment`},
		{in: "/v{n}", wantErr: `path "/v{n}": a parameter must be a whole segment, such as /{name}/`},
		{in: "/a%2Fb", wantErr: `path "/a%2Fb": segment "a%2Fb" may not contain %, ?, #, spaces or control characters (write it decoded)`},
		{in: "/a?b", wantErr: `path "/a?b": segment "a?b" may not contain %, ?, #, spaces or control characters (write it decoded)`},
		{in: "/a b", wantErr: `path "/a b": segment "a b" may not contain %, ?, #, spaces or control characters (write it decoded)`},
	}
	for _, tt := range tests {
		got, err := ParseRoutePattern(tt.in)
		if gotErr := errString(err); gotErr != tt.wantErr {
			t.Errorf("ParseRoutePattern(%q) error = %q, want %q", tt.in, gotErr, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("ParseRoutePattern(%q) (-got +want):\n%s", tt.in, diff)
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff(got.Params(), tt.params); diff != "" {
			t.Errorf("ParseRoutePattern(%q).Params() (-got +want):\n%s", tt.in, diff)
		}
		if s := got.String(); s != tt.in {
			t.Errorf("ParseRoutePattern(%q).String() = %q, want the input", tt.in, s)
		}
	}
}

func TestParseRewrite(t *testing.T) {
	tests := []struct {
		pattern, in string
		want        Template
		wantErr     string
	}{
		{pattern: "/api/search/{type}", in: "/v1/{type}s/", want: Template{Parts: []TemplatePart{{Literal: "/v1/"}, {Param: "type"}, {Literal: "s/"}}}},
		{pattern: "/x", in: "/y", want: Template{Parts: []TemplatePart{{Literal: "/y"}}}},
		{pattern: "/f/{p...}", in: "/static/{p...}", want: Template{Parts: []TemplatePart{{Literal: "/static/"}, {Param: "p"}}}},
		{pattern: "/f/{p...}", in: "/static/{p}", want: Template{Parts: []TemplatePart{{Literal: "/static/"}, {Param: "p"}}}},
		{pattern: "/a/{id}", in: "/{id}{id}", want: Template{Parts: []TemplatePart{{Literal: "/"}, {Param: "id"}, {Param: "id"}}}},
		{pattern: "/a/{id}", in: "v1/{id}", wantErr: `rewrite "v1/{id}" must start with /`},
		{pattern: "/a/{id}", in: "/v1/{idx}", wantErr: `rewrite uses {idx}, which is not a parameter of the path (it has id)`},
		{pattern: "/a", in: "/v1/{id}", wantErr: `rewrite uses {id}, but the path has no parameters`},
		{pattern: "/a/{id}", in: "/v1/{id...}", wantErr: `rewrite uses {id...}, but {id} in the path is one segment: write {id}`},
		{pattern: "/a/{id}", in: "/v1/{id", wantErr: `rewrite has a "{" without "}"`},
		{pattern: "/a/{id}", in: "/v1/id}", wantErr: `rewrite has a "}" without "{"`},
		{pattern: "/a/{id}", in: "/v1/?q={id}", wantErr: `rewrite "/v1/?q={id}" may not contain ?, #, spaces or control characters`},
	}
	for _, tt := range tests {
		p, err := ParseRoutePattern(tt.pattern)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseRewrite(tt.in, p)
		if gotErr := errString(err); gotErr != tt.wantErr {
			t.Errorf("ParseRewrite(%q, %q) error = %q, want %q", tt.in, tt.pattern, gotErr, tt.wantErr)
			continue
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("ParseRewrite(%q, %q) (-got +want):\n%s", tt.in, tt.pattern, diff)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "300s", want: 300 * time.Second},
		{in: "5m", want: 5 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "300", want: 300 * time.Second},
		{in: " 60 ", want: time.Minute},
		{in: "1", want: time.Second},
		{in: "24h", want: 24 * time.Hour},
		{in: "86400", want: 24 * time.Hour},
		{in: "0", wantErr: `retry_after "0" must be from 1 to 86400 seconds`},
		{in: "-5", wantErr: `retry_after "-5" must be from 1 to 86400 seconds`},
		{in: "86401", wantErr: `retry_after "86401" must be from 1 to 86400 seconds`},
		{in: "500ms", wantErr: `retry_after "500ms" is not a whole number of seconds`},
		{in: "0s", wantErr: `retry_after "0s" must be from 1s to 24h`},
		{in: "25h", wantErr: `retry_after "25h" must be from 1s to 24h`},
		{in: "1d", want: 24 * time.Hour},
		{in: "2d", wantErr: `retry_after "2d" must be from 1s to 24h`},
		{in: "", wantErr: `retry_after "" is not a duration such as 300s or 5m, nor a number of seconds`},
	}
	for _, tt := range tests {
		got, err := ParseRetryAfter(tt.in)
		if gotErr := errString(err); gotErr != tt.wantErr || got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, %q; want %v, %q", tt.in, got, gotErr, tt.want, tt.wantErr)
		}
	}
}

func TestParseTrustedProxy(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr string
	}{
		{in: "10.0.0.0/8", want: "10.0.0.0/8"},
		{in: "10.1.2.3/8", want: "10.0.0.0/8"},
		{in: "192.168.0.1", want: "192.168.0.1/32"},
		{in: " 2001:db8::/32 ", want: "2001:db8::/32"},
		{in: "::1", want: "::1/128"},
		{in: "::ffff:10.0.0.1", want: "10.0.0.1/32"},
		{in: "::ffff:10.0.0.0/104", want: "10.0.0.0/8"},
		{in: "10.0.0.0/33", wantErr: `"10.0.0.0/33" is not a CIDR prefix such as 10.0.0.0/8`},
		{in: "example.org", wantErr: `"example.org" is not an IP address or CIDR prefix`},
		{in: "fe80::1%eth0", wantErr: `"fe80::1%eth0": an address with a zone cannot be trusted`},
		{in: "", wantErr: `"" is not an IP address or CIDR prefix`},
	}
	for _, tt := range tests {
		got, err := ParseTrustedProxy(tt.in)
		gotErr := errString(err)
		var want netip.Prefix
		if tt.want != "" {
			want = netip.MustParsePrefix(tt.want)
		}
		if gotErr != tt.wantErr || got != want {
			t.Errorf("ParseTrustedProxy(%q) = %v, %q; want %v, %q", tt.in, got, gotErr, want, tt.wantErr)
		}
	}
}

func TestParseLimit(t *testing.T) {
	tests := []struct {
		in      string
		alg     ratelimit.Algorithm
		want    ratelimit.Limit
		wantErr string
	}{
		{in: "1500/5m", want: ratelimit.Limit{Count: 1500, Window: 5 * time.Minute}},
		{in: "60/1m", alg: ratelimit.GCRA, want: ratelimit.Limit{Count: 60, Window: time.Minute, Algorithm: ratelimit.GCRA}},
		{in: "5000000000/1d", alg: ratelimit.GCRA, want: ratelimit.Limit{Count: 5000000000, Window: 24 * time.Hour, Algorithm: ratelimit.GCRA}},
		{in: "5000000000/1d", alg: ratelimit.FixedWindow, wantErr: `limit "5000000000/1d": count 5000000000 exceeds 4294967295, the most a fixed_window limit can count (use gcra)`},
		{in: "abc/5m", wantErr: `limit "abc/5m": count "abc" is not a positive integer`},
	}
	for _, tt := range tests {
		got, err := ParseLimit(tt.in, tt.alg)
		if gotErr := errString(err); gotErr != tt.wantErr || got != tt.want {
			t.Errorf("ParseLimit(%q, %v) = %+v, %q; want %+v, %q", tt.in, tt.alg, got, gotErr, tt.want, tt.wantErr)
		}
	}
}

func TestCheckListen(t *testing.T) {
	tests := []struct {
		in      string
		wantErr string
	}{
		{in: "127.0.0.1:8080"},
		{in: ":8080"},
		{in: "0.0.0.0:0"},
		{in: "[::1]:9090"},
		{in: "[::]:80"},
		{in: "localhost:8080"},
		{in: "gateway.internal:65535"},
		{in: "8080", wantErr: "missing port"},
		{in: "::1:8080", wantErr: "an IPv6 address must be in brackets, as [::1]:8080"},
		{in: "localhost:http", wantErr: `port "http" is not a number from 0 to 65535`},
		{in: "localhost:65536", wantErr: `port "65536" is not a number from 0 to 65535`},
		{in: "localhost:", wantErr: `port "" is not a number from 0 to 65535`},
		{in: "local host:80", wantErr: `"local host" is not an IP address or host name`},
		{in: "[zz]:80", wantErr: `"zz" is not an IPv6 address`},
		{in: "[127.0.0.1]:80", wantErr: `"127.0.0.1" is not an IPv6 address`},
	}
	for _, tt := range tests {
		if got := errString(checkListen(tt.in)); got != tt.wantErr {
			t.Errorf("checkListen(%q) = %q, want %q", tt.in, got, tt.wantErr)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseCost(t *testing.T) {
	for _, tt := range []struct {
		in, kind, header, wantErr string
	}{
		{in: "", kind: CostRequests},
		{in: "requests", kind: CostRequests},
		{in: "upstream_seconds", kind: CostUpstreamSeconds},
		{in: "response_bytes", kind: CostResponseBytes},
		{in: "header:x-cost", kind: CostHeader, header: "X-Cost"},
		{in: "header:", wantErr: `cost "header:": "" is not a header name`},
		{in: "header: X-Cost", wantErr: `cost "header: X-Cost": " X-Cost" is not a header name: write it without blanks, "header:X-Cost"`},
		{in: "header:X\x00", wantErr: `cost "header:X\x00": "X\x00" is not a header name`},
		{in: "Requests", wantErr: `unknown cost "Requests"`},
	} {
		kind, header, err := ParseCost(tt.in)
		if gotErr := errString(err); gotErr != tt.wantErr || kind != tt.kind || header != tt.header {
			t.Errorf("ParseCost(%q) = %q, %q, %q; want %q, %q, %q", tt.in, kind, header, gotErr, tt.kind, tt.header, tt.wantErr)
		}
	}
}

func TestParseDuration(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		in      string
		lo, hi  time.Duration
		want    time.Duration
		wantErr string
	}{
		{in: "10s", lo: time.Millisecond, hi: time.Hour, want: 10 * time.Second},
		{in: " 1h30m ", lo: time.Millisecond, hi: 2 * time.Hour, want: 90 * time.Minute},
		{in: "250ms", lo: time.Millisecond, hi: time.Hour, want: 250 * time.Millisecond},
		{in: "1d", lo: time.Second, hi: 400 * day, want: day},
		{in: "400d", lo: time.Second, hi: 400 * day, want: 400 * day},
		{in: "24h", lo: time.Second, hi: 400 * day, want: day},
		{in: "1h", lo: time.Millisecond, hi: time.Hour, want: time.Hour},
		{in: "401d", lo: time.Second, hi: 400 * day, wantErr: `"401d" must be from 1s to 400d`},
		{in: "1d", lo: time.Millisecond, hi: time.Hour, wantErr: `"1d" must be from 1ms to 1h`},
		{in: "0d", lo: time.Second, hi: day, wantErr: `"0d" must be from 1s to 1d`},
		{in: "0s", lo: time.Millisecond, hi: time.Hour, wantErr: `"0s" must be from 1ms to 1h`},
		{in: "-1d", lo: time.Second, hi: day, wantErr: `"-1d" must be from 1s to 1d`},
		{in: "-5m", lo: time.Second, hi: day, wantErr: `"-5m" must be from 1s to 1d`},
		{in: "999999999999d", lo: time.Second, hi: day, wantErr: `"999999999999d" must be from 1s to 1d`},
		{in: "9223372036854775807d", lo: time.Second, hi: day, wantErr: `"9223372036854775807d" must be from 1s to 1d`},
		{in: "1.5d", lo: time.Second, hi: day, wantErr: `"1.5d" is not a duration such as 10s, 5m, 1h or 1d`},
		{in: "1d12h", lo: time.Second, hi: 400 * day, wantErr: `"1d12h" is not a duration such as 10s, 5m, 1h or 1d`},
		{in: "d", lo: time.Second, hi: day, wantErr: `"d" is not a duration such as 10s, 5m, 1h or 1d`},
		{in: "10", lo: time.Second, hi: day, wantErr: `"10" is not a duration such as 10s, 5m, 1h or 1d`},
		{in: "", lo: time.Second, hi: day, wantErr: `"" is not a duration such as 10s, 5m, 1h or 1d`},
		{in: "forever", lo: time.Second, hi: day, wantErr: `"forever" is not a duration such as 10s, 5m, 1h or 1d`},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in, tt.lo, tt.hi)
		if gotErr := errString(err); gotErr != tt.wantErr || got != tt.want {
			t.Errorf("ParseDuration(%q, %v, %v) = %v, %q; want %v, %q", tt.in, tt.lo, tt.hi, got, gotErr, tt.want, tt.wantErr)
		}
	}
}
