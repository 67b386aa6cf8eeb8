package logs

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/floodgate/floodgate/internal/uaclass"
)

// want is what a test expects of a parsed line; its strings are compared
// with the Record's byte slices.
type want struct {
	Kind                           Kind
	Time                           string // RFC 3339
	Client, Method, Target, Host   string
	UserAgent                      string
	HasUserAgent, ClientHashed     bool
	Class                          uaclass.Class
	Status                         int
	Bytes                          int64
	Duration                       time.Duration
	Route, Rule, Decision, Blocked string
	Session, APIClient             string
	WouldBlock                     []string
}

func got(r *Record) want {
	w := want{Kind: r.Kind, Time: r.At().Format(time.RFC3339Nano), Client: string(r.Client), Method: string(r.Method),
		Target: string(r.Target), Host: string(r.Host), UserAgent: string(r.UserAgent), HasUserAgent: r.HasUserAgent,
		ClientHashed: r.ClientHashed, Class: r.Class, Status: r.Status, Bytes: r.Bytes, Duration: r.Duration,
		Route: string(r.Route), Rule: string(r.Rule), Decision: string(r.Decision), Blocked: string(r.BlockedBy),
		Session: string(r.Session), APIClient: string(r.APIClient)}
	for _, b := range r.WouldBlock {
		w.WouldBlock = append(w.WouldBlock, string(b))
	}
	return w
}

type parseCase struct {
	name string
	line string
	ok   bool
	want want
}

const chromeUA = "Mozilla/5.0 (Windows NT 6.1; WOW64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/32.0.1700.107 Safari/537.36"

var parseCases = map[Format][]parseCase{
	Common: {
		{"apache example", `127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326`, true,
			want{Time: "2000-10-10T20:55:36Z", Client: "127.0.0.1", Method: "GET", Target: "/apache_pb.gif", Status: 200, Bytes: 2326}},
		{"host name client, dash size", `crawl-66-249-73-135.googlebot.com - - [17/May/2015:10:05:03 +0000] "HEAD /a?b=c HTTP/1.1" 304 -`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "crawl-66-249-73-135.googlebot.com", Method: "HEAD", Target: "/a?b=c", Status: 304, Bytes: 0}},
		{"ipv6 client", `2001:db8::1 - - [01/Jan/2026:00:00:00 +0000] "GET / HTTP/2.0" 200 5`, true,
			want{Time: "2026-01-01T00:00:00Z", Client: "2001:db8::1", Method: "GET", Target: "/", Status: 200, Bytes: 5}},
		{"combined line read as common", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "curl/7.46.0"`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "1.2.3.4", Method: "GET", Target: "/", Status: 200, Bytes: 1}},
		{"escaped quote in request", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a\"b HTTP/1.1" 400 0`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "1.2.3.4", Method: "GET", Target: `/a\"b`, Status: 400, Bytes: 0}},
		{"garbage request is still a request", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "\x16\x03\x01" 400 0`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "1.2.3.4", Status: 400, Bytes: 0}},
		{"empty request", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "" 408 0`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "1.2.3.4", Status: 408, Bytes: 0}},
		{"leap second", `1.2.3.4 - - [31/Dec/2016:23:59:60 +0000] "GET / HTTP/1.1" 200 1`, true,
			want{Time: "2017-01-01T00:00:00Z", Client: "1.2.3.4", Method: "GET", Target: "/", Status: 200, Bytes: 1}},
		{"positive offset", `1.2.3.4 - - [01/Mar/2024:01:30:00 +0530] "GET / HTTP/1.1" 200 1`, true,
			want{Time: "2024-02-29T20:00:00Z", Client: "1.2.3.4", Method: "GET", Target: "/", Status: 200, Bytes: 1}},
		{"empty line", ``, false, want{}},
		{"no time", `1.2.3.4 - - "GET / HTTP/1.1" 200 1`, false, want{}},
		{"bad month", `1.2.3.4 - - [17/Mai/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"31 February", `1.2.3.4 - - [31/Feb/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"hour 24", `1.2.3.4 - - [17/May/2015:24:05:03 +0000] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"bad zone", `1.2.3.4 - - [17/May/2015:10:05:03 +0099] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"short time", `1.2.3.4 - - [17/May/2015:10:05 +0000] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"unterminated request", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1 200 1`, false, want{}},
		{"status not a number", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" abc 1`, false, want{}},
		{"two-digit status", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 20 1`, false, want{}},
		{"size not a number", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 12x`, false, want{}},
		{"no size", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200`, false, want{}},
		{"leading space", ` 1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"year out of range", `1.2.3.4 - - [17/May/9999:10:05:03 +0000] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"only brackets", `x [`, false, want{}},
		// The user name (%u, nginx's $remote_user, filled from any
		// Authorization header) is written with its spaces and brackets.
		{"user name with a bracket", `127.0.0.1 - [x [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		{"user name with spaces and brackets", `127.0.0.1 - a [b] c ]] [[ [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		{"user name a bracket right before the time", `127.0.0.1 - [ [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		{"user name of many brackets", `127.0.0.1 - ` + strings.Repeat("[", 5000) + ` [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		{"a time in the user name", `127.0.0.1 - [01/Jan/2020:00:00:00 +0000] [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		{"a time and a request in the user name, Apache's escapes", `127.0.0.1 - x [01/Jan/2020:00:00:00 +0000] \"GET /fake HTTP/1.1\" 200 1 [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		{"a time and a request in the user name, nginx's escapes", `127.0.0.1 - x [01/Jan/2020:00:00:00 +0000] \x22GET /fake HTTP/1.1\x22 200 1 [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		{"an invalid time followed by a quote in the user name", `127.0.0.1 - [31/Feb/2026:14:20:09 +0000] "x [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3}},
		// Logged without escapes (nginx escape=none), a user name can
		// forge the rest of the line: the first time followed by a
		// quote is taken.
		{"unescaped quote in the user name", `127.0.0.1 - x [01/Jan/2020:00:00:00 +0000] "GET /fake HTTP/1.1" 200 1 [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, true,
			want{Time: "2020-01-01T00:00:00Z", Client: "127.0.0.1", Method: "GET", Target: "/fake", Status: 200, Bytes: 1}},
		{"no space before the time", `127.0.0.1 - [[02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3`, false, want{}},
		{"time not followed by a request", `127.0.0.1 - - [02/Dec/2026:14:20:09 +0000] 200 3`, false, want{}},
		{"time followed by a space only", `127.0.0.1 - - [02/Dec/2026:14:20:09 +0000] `, false, want{}},
		{"many brackets, no time", `127.0.0.1 - ` + strings.Repeat("[ ", 5000) + `"GET / HTTP/1.1" 200 3`, false, want{}},
		// A first field that is not an address followed by one that is:
		// a virtual host before the client (vhost_combined, or a custom
		// format), not a client and its ident.
		{"vhost_combined line", `www.example.com:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`, false, want{}},
		{"virtual host without port before an IPv6 client", `www.example.com 2001:db8::1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`, false, want{}},
		{"address as ident after an address", `192.0.2.1 203.0.113.9 - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "192.0.2.1", Method: "GET", Target: "/", Status: 200, Bytes: 5}},
		{"host name ident after a host name", `crawl.example.net identd-user - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "crawl.example.net", Method: "GET", Target: "/", Status: 200, Bytes: 5}},
		{"client with its port", `192.0.2.1:51234 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "192.0.2.1:51234", Method: "GET", Target: "/", Status: 200, Bytes: 5}},
	},
	Combined: {
		{"elastic line", `83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /presentations/logstash-monitorama-2013/images/kibana-search.png HTTP/1.1" 200 203023 "http://semicomplete.com/presentations/logstash-monitorama-2013/" "` + chromeUA + `"`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "83.149.9.216", Method: "GET", Target: "/presentations/logstash-monitorama-2013/images/kibana-search.png",
				Status: 200, Bytes: 203023, UserAgent: chromeUA, HasUserAgent: true}},
		{"no user agent", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "-"`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "1.2.3.4", Method: "GET", Target: "/", Status: 200, Bytes: 1, HasUserAgent: true}},
		{"nginx extra field", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "curl/8" "10.0.0.1, 10.0.0.2"`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "1.2.3.4", Method: "GET", Target: "/", Status: 200, Bytes: 1, UserAgent: "curl/8", HasUserAgent: true}},
		{"nginx escapes", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "a\x22b"`, true,
			want{Time: "2015-05-17T10:05:03Z", Client: "1.2.3.4", Method: "GET", Target: "/", Status: 200, Bytes: 1, UserAgent: `a\x22b`, HasUserAgent: true}},
		{"truncated user agent (the Elastic log's line 8899)", `46.118.127.106 - - [20/May/2015:12:05:17 +0000] "GET /scripts/grok-py-test/configlib.py HTTP/1.1" 200 235 "-" "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html`, false, want{}},
		{"common line", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1`, false, want{}},
		{"referer only", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-"`, false, want{}},
		{"unquoted user agent", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" curl`, false, want{}},
		{"trailing backslash", `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "abc\"`, false, want{}},
		{"user name with a bracket", `127.0.0.1 - [x [02/Dec/2026:14:20:09 +0000] "GET / HTTP/1.1" 200 3 "-" "curl/8"`, true,
			want{Time: "2026-12-02T14:20:09Z", Client: "127.0.0.1", Method: "GET", Target: "/", Status: 200, Bytes: 3, UserAgent: "curl/8", HasUserAgent: true}},
		{"vhost_combined line", `www.example.com:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
	},
	VhostCombined: {
		{"debian example", `www.example.com:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "203.0.113.9", Host: "www.example.com", Method: "GET", Target: "/", Status: 200, Bytes: 5, UserAgent: "curl/8", HasUserAgent: true}},
		{"ipv6 client, user name with a bracket", `api.example.com:80 2001:db8::7 - [x [10/Oct/2026:13:55:36 +0000] "POST /v1 HTTP/1.1" 429 0 "https://example.com/" "` + chromeUA + `"`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "2001:db8::7", Host: "api.example.com", Method: "POST", Target: "/v1", Status: 429, Bytes: 0, UserAgent: chromeUA, HasUserAgent: true}},
		{"host name client", `www.example.com:443 crawl-66-249-73-135.googlebot.com - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "-"`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "crawl-66-249-73-135.googlebot.com", Host: "www.example.com", Method: "GET", Target: "/", Status: 200, Bytes: 5, HasUserAgent: true}},
		{"address as virtual host", `192.0.2.10:8080 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "203.0.113.9", Host: "192.0.2.10", Method: "GET", Target: "/", Status: 200, Bytes: 5, UserAgent: "curl/8", HasUserAgent: true}},
		{"bracketed ipv6 virtual host", `[2001:db8::1]:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, true,
			want{Time: "2026-10-10T13:55:36Z", Client: "203.0.113.9", Host: "2001:db8::1", Method: "GET", Target: "/", Status: 200, Bytes: 5, UserAgent: "curl/8", HasUserAgent: true}},
		{"combined line", `83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 1 "-" "curl/8"`, false, want{}},
		{"combined line of an ipv6 client", `2001:db8::1 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"combined line of a client with its port", `192.0.2.1:51234 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"no port", `www.example.com 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"port not a number", `www.example.com:https 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"port too long", `www.example.com:123456 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"empty host", `:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"empty brackets", `[]:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"no client", `www.example.com:443  - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"`, false, want{}},
		{"common line after the virtual host", `www.example.com:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5`, false, want{}},
	},
	ALB: {
		{"http", `http 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"`, true,
			want{Time: "2018-07-02T22:22:48.364Z", Client: "192.168.131.39", Method: "GET", Target: "/", Host: "www.example.com", Status: 200, Bytes: 366,
				UserAgent: "curl/7.46.0", HasUserAgent: true, Duration: time.Millisecond}},
		// The request's arrival is request_creation_time (field 22), not
		// time, when the response was sent: here 40 s apart, for a slow
		// upstream. Its fraction and zone are read as RFC 3339 has them.
		{"request_creation_time", `https 2026-11-30T10:00:40.5Z app/lb/1 203.0.113.9:2817 10.0.0.1:80 0.001 39.999 0.000 200 200 34 366 "GET https://www.example.com:443/scores HTTP/1.1" "curl/8" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:1:targetgroup/t/1 "Root=1-2" "www.example.com" "-" 0 2026-11-30T11:00:00.123456+01:00 "forward" "-" "-" "10.0.0.1:80" "200" "-" "-"`, true,
			want{Time: "2026-11-30T10:00:00.123456Z", Client: "203.0.113.9", Method: "GET", Target: "/scores", Host: "www.example.com", Status: 200, Bytes: 366,
				UserAgent: "curl/8", HasUserAgent: true, Duration: 39999 * time.Millisecond}},
		// A line is written when the response ends: a WebSocket's when
		// the connection closes, an hour after request_creation_time
		// here, among lines of requests that arrived an hour later. Its
		// Time is still the arrival, and replay puts it back in order
		// only as far as ReorderSpan (package replay).
		{"websocket logged an hour after it arrived", `wss 2026-11-30T11:00:00.000000Z app/lb/1 203.0.113.9:44244 10.0.0.171:8010 0.000 3599.500 0.000 101 101 218 786 "GET https://www.example.com:443/live HTTP/1.1" "-" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:1:targetgroup/t/1 "Root=1-3" "www.example.com" "-" 1 2026-11-30T10:00:00.500000Z "forward" "-" "-" "10.0.0.171:8010" "101" "-" "-"`, true,
			want{Time: "2026-11-30T10:00:00.5Z", Client: "203.0.113.9", Method: "GET", Target: "/live", Host: "www.example.com", Status: 101, Bytes: 786,
				HasUserAgent: true, Duration: 3599500 * time.Millisecond}},
		// Without request_creation_time (lines cut short, logs written
		// before the field existed), the arrival is time less the three
		// processing times that are not -1.
		{"no request_creation_time", `http 2018-07-02T22:23:00.186641Z app/lb/1 192.168.131.39:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET http://www.example.com/ HTTP/1.1" "curl/7.46.0"`, true,
			want{Time: "2018-07-02T22:23:00.015641Z", Client: "192.168.131.39", Method: "GET", Target: "/", Host: "www.example.com", Status: 200, Bytes: 57,
				UserAgent: "curl/7.46.0", HasUserAgent: true, Duration: 48 * time.Millisecond}},
		{"ipv6 client with query", `h2 2018-07-02T22:23:00.186641Z app/lb/1 [2001:db8::7]:48160 10.0.0.66:9000 0.000 0.250 0.000 429 429 5 257 "POST https://api.example.com:443/v1/x?q=1 HTTP/2.0" "-" x y`, true,
			want{Time: "2018-07-02T22:22:59.936641Z", Client: "2001:db8::7", Method: "POST", Target: "/v1/x?q=1", Host: "api.example.com", Status: 429, Bytes: 257,
				HasUserAgent: true, Duration: 250 * time.Millisecond}},
		{"lambda failure", `http 2018-11-30T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 - 0.000 0.001 0.000 502 - 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - -`, true,
			want{Time: "2018-11-30T22:23:00.185641Z", Client: "192.168.131.39", Method: "GET", Target: "/", Host: "www.example.com", Status: 502, Bytes: 366,
				UserAgent: "curl/7.46.0", HasUserAgent: true, Duration: time.Millisecond}},
		{"malformed request", `http 2018-11-30T22:23:00.186641Z app/lb/1 192.168.131.39:2817 - -1 -1 -1 400 - 0 0 "- - - " "-" - -`, true,
			want{Time: "2018-11-30T22:23:00.186641Z", Client: "192.168.131.39", Status: 400, Bytes: 0, HasUserAgent: true}},
		{"unknown type", `ftp 2018-07-02T22:23:00.186641Z app/lb/1 1.2.3.4:1 - 0 0 0 200 200 0 0 "GET http://x/ HTTP/1.1" "-"`, false, want{}},
		{"bad time", `http 2018-07-02 app/lb/1 1.2.3.4:1 - 0 0 0 200 200 0 0 "GET http://x/ HTTP/1.1" "-"`, false, want{}},
		{"too few fields", `http 2018-07-02T22:23:00.186641Z app/lb/1 1.2.3.4:1`, false, want{}},
		{"unterminated quote", `http 2018-07-02T22:23:00.186641Z app/lb/1 1.2.3.4:1 - 0 0 0 200 200 0 0 "GET http://x/ HTTP/1.1 "-"`, false, want{}},
		{"no client", `http 2018-07-02T22:23:00.186641Z app/lb/1 - - 0 0 0 200 200 0 0 "GET http://x/ HTTP/1.1" "-"`, false, want{}},
	},
	WAF: {
		{"blocked by a rule", `{"timestamp":1576280412771,"formatVersion":1,"action":"BLOCK","terminatingRuleId":"STMTest_SQLi_XSS","terminatingRuleType":"REGULAR","httpRequest":{"clientIp":"1.1.1.1","country":"AU","headers":[{"name":"Host","value":"localhost:1989"},{"name":"User-Agent","value":"curl/7.61.1"}],"uri":"/myUri","args":"a=1","httpVersion":"HTTP/1.1","httpMethod":"GET","requestId":"rid"}}`, true,
			want{Time: "2019-12-13T23:40:12.771Z", Client: "1.1.1.1", Method: "GET", Target: "/myUri?a=1", Host: "localhost", UserAgent: "curl/7.61.1", HasUserAgent: true, Bytes: -1}},
		{"rate-based block, escapes", `{"timestamp":1632420429309,"action":"BLOCK","terminatingRuleId":"rate-limit-ip","terminatingRuleType":"RATE_BASED","responseCodeSent":429,"httpRequest":{"clientIp":"72.21.198.65","headers":[{"name":"user-agent","value":"Mozilla\/5.0 \"x\" \u00e9\ud83d\ude00"}],"uri":"\/scores","args":"","httpMethod":"GET"}}`, true,
			want{Time: "2021-09-23T18:07:09.309Z", Client: "72.21.198.65", Method: "GET", Target: "/scores", UserAgent: "Mozilla/5.0 \"x\" é😀", HasUserAgent: true, Status: 429, Bytes: -1, Blocked: "rate-limit-ip"}},
		{"lone surrogate", `{"timestamp":1,"httpRequest":{"clientIp":"1.1.1.1","headers":[{"name":"User-Agent","value":"\ud800x"}],"uri":"/","httpMethod":"GET"}}`, true,
			want{Time: "1970-01-01T00:00:00.001Z", Client: "1.1.1.1", Method: "GET", Target: "/", UserAgent: "\ufffdx", HasUserAgent: true, Bytes: -1}},
		{"no http request", `{"timestamp":1576280412771,"action":"ALLOW"}`, false, want{}},
		{"no client", `{"timestamp":1576280412771,"httpRequest":{"uri":"/"}}`, false, want{}},
		{"trailing garbage", `{"timestamp":1576280412771,"httpRequest":{"clientIp":"1.1.1.1"}} x`, false, want{}},
		{"truncated", `{"timestamp":1576280412771,"httpRequest":{"clientIp":"1.1.1.1"`, false, want{}},
		{"not an object", `[1,2,3]`, false, want{}},
		{"timestamp a string", `{"timestamp":"now","httpRequest":{"clientIp":"1.1.1.1"}}`, false, want{}},
		{"timestamp zero", `{"timestamp":0,"httpRequest":{"clientIp":"1.1.1.1"}}`, true,
			want{Time: "1970-01-01T00:00:00Z", Client: "1.1.1.1", Bytes: -1}},
		{"last millisecond of 2261", `{"timestamp":9214646399999,"httpRequest":{"clientIp":"1.1.1.1"}}`, true,
			want{Time: "2261-12-31T23:59:59.999Z", Client: "1.1.1.1", Bytes: -1}},
		{"first millisecond of 2262", `{"timestamp":9214646400000,"httpRequest":{"clientIp":"1.1.1.1"}}`, false, want{}},
		{"timestamp past int64 nanoseconds", `{"timestamp":9300000000000,"httpRequest":{"clientIp":"1.1.1.1"}}`, false, want{}},
		{"timestamp far past int64 nanoseconds", `{"timestamp":100000000000000,"httpRequest":{"clientIp":"1.1.1.1"}}`, false, want{}},
		{"largest timestamp read", `{"timestamp":999999999999999999,"httpRequest":{"clientIp":"1.1.1.1"}}`, false, want{}},
		{"negative timestamp", `{"timestamp":-5000,"httpRequest":{"clientIp":"1.1.1.1"}}`, false, want{}},
		{"negative zero timestamp", `{"timestamp":-0,"httpRequest":{"clientIp":"1.1.1.1"}}`, true,
			want{Time: "1970-01-01T00:00:00Z", Client: "1.1.1.1", Bytes: -1}},
		{"deep nesting", `{"timestamp":1,"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `,"httpRequest":{"clientIp":"1.1.1.1"}}`, false, want{}},
		{"bad escape", `{"timestamp":1,"httpRequest":{"clientIp":"1.1.1.1","uri":"/\q"}}`, true,
			want{Time: "1970-01-01T00:00:00.001Z", Client: "1.1.1.1", Bytes: -1}},
	},
	Floodgate: {
		{"access record", `{"time":"2026-11-30T10:00:00.123456789Z","msg":"access","method":"GET","path":"/scores","status":429,"route":"api","duration_ms":0.412,"ua":"python-requests/2.31.0","ua_class":"script","client":"3f2a9c0d1e4b5a6f","bytes":187,"blocked_by":"rate-limit-csv-endpoints","would_block":["shadow-requests","x"]}`, true,
			want{Time: "2026-11-30T10:00:00.123456789Z", Client: "3f2a9c0d1e4b5a6f", ClientHashed: true, Method: "GET", Target: "/scores", Status: 429, Route: "api",
				Duration: 412 * time.Microsecond, UserAgent: "python-requests/2.31.0", HasUserAgent: true, Class: uaclass.Script, Bytes: 187,
				Blocked: "rate-limit-csv-endpoints", WouldBlock: []string{"shadow-requests", "x"}}},
		{"access record with a session and an API client", `{"time":"2026-11-30T10:00:00Z","msg":"access","method":"GET","path":"/api","status":200,"route":"api","duration_ms":1,"ua":"","ua_class":"script","client":"3f2a9c0d1e4b5a6f","bytes":0,"session":"9c1d2e3f4a5b6c7d","api_client":"research-lab"}`, true,
			want{Time: "2026-11-30T10:00:00Z", Client: "3f2a9c0d1e4b5a6f", ClientHashed: true, Method: "GET", Target: "/api", Status: 200, Route: "api",
				Duration: time.Millisecond, HasUserAgent: true, Class: uaclass.Script, Session: "9c1d2e3f4a5b6c7d", APIClient: "research-lab"}},
		{"decision record, slog time with offset", `{"time":"2026-11-30T11:00:00.5+01:00","level":"INFO","msg":"decision","rule":"rate-limit-ip","action":"block","decision":"would_block","route":"api","method":"GET","path":"/","ua_class":"browser","key_type":"ip","key_hash":"0011223344556677","limit":"1500/5m","remaining":0,"retry_after_s":1.5}`, true,
			want{Kind: KindDecision, Time: "2026-11-30T10:00:00.5Z", Client: "0011223344556677", ClientHashed: true, Method: "GET", Target: "/", Route: "api",
				Class: uaclass.Browser, Rule: "rate-limit-ip", Decision: "would_block", Bytes: -1}},
		{"deny decision without key", `{"time":"2026-11-30T10:00:00Z","level":"INFO","msg":"decision","rule":"no-bots","action":"deny","decision":"denied","route":"api","method":"GET","path":"/"}`, true,
			want{Kind: KindDecision, Time: "2026-11-30T10:00:00Z", ClientHashed: true, Method: "GET", Target: "/", Route: "api", Rule: "no-bots", Decision: "denied", Bytes: -1}},
		{"other slog record", `{"time":"2026-11-30T10:00:00Z","level":"WARN","msg":"rule skipped","rule":"x","error":"boom"}`, false, want{}},
		{"no time", `{"msg":"access","client":"abc"}`, false, want{}},
		{"bad time", `{"time":"yesterday","client":"abc"}`, false, want{}},
		{"too precise", `{"time":"2026-11-30T10:00:00.1234567891Z","client":"abc"}`, false, want{}},
		{"trailing comma", `{"time":"2026-11-30T10:00:00Z","client":"abc",}`, false, want{}},
		{"missing colon", `{"time" "2026-11-30T10:00:00Z","client":"abc"}`, false, want{}},
	},
}

func TestParse(t *testing.T) {
	for f, cases := range parseCases {
		for _, tc := range cases {
			t.Run(f.String()+"/"+tc.name, func(t *testing.T) {
				var rec Record
				var sc scratch
				var tc2 timeCache
				ok := parse(f, &rec, []byte(tc.line), &sc, &tc2)
				if ok != tc.ok {
					t.Fatalf("parse(%s, %q) ok = %v, want %v", f, tc.line, ok, tc.ok)
				}
				if !ok {
					return
				}
				if diff := cmp.Diff(got(&rec), tc.want); diff != "" {
					t.Errorf("parse(%s, %q) (-got +want):\n%s", f, tc.line, diff)
				}
			})
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name, sample string
		want         Format
	}{
		{"combined", parseCases[Combined][0].line + "\n" + parseCases[Combined][1].line + "\n", Combined},
		{"common", parseCases[Common][0].line + "\n" + parseCases[Common][1].line + "\n", Common},
		{"mostly common with one combined", parseCases[Common][0].line + "\n" + parseCases[Common][1].line + "\n" + parseCases[Combined][0].line + "\n", Common},
		{"alb", parseCases[ALB][0].line + "\n", ALB},
		{"waf", parseCases[WAF][0].line + "\n", WAF},
		{"floodgate", parseCases[Floodgate][0].line + "\n" + parseCases[Floodgate][1].line + "\n", Floodgate},
		{"garbage first line", "#Version: 1.0\n" + parseCases[ALB][0].line + "\n", ALB},
		{"one line without newline", parseCases[Common][0].line, Common},
		{"nothing", "", Auto},
		{"unknown", "hello\nworld\n", Auto},
		{"CRLF", parseCases[Combined][0].line + "\r\n", Combined},
		{"vhost_combined", parseCases[VhostCombined][0].line + "\n" + parseCases[VhostCombined][1].line + "\n", VhostCombined},
		// Read as combined too, with the virtual host as the client: the
		// more specific format wins the tie.
		{"vhost_combined with host name clients", parseCases[VhostCombined][2].line + "\n", VhostCombined},
		{"combined with ipv6 clients", parseCases[VhostCombined][6].line + "\n", Combined},
		{"combined with clients' ports", parseCases[VhostCombined][7].line + "\n", Combined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Detect([]byte(tc.sample)); got != tc.want {
				t.Errorf("Detect(%q) = %v, want %v", tc.sample, got, tc.want)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	for _, n := range FormatNames() {
		f, err := ParseFormat(n)
		if err != nil || f.String() != n {
			t.Errorf("ParseFormat(%q) = %v, %v", n, f, err)
		}
	}
	if f, err := ParseFormat(""); err != nil || f != Auto {
		t.Errorf(`ParseFormat("") = %v, %v; want auto`, f, err)
	}
	if f, err := ParseFormat("vhost_combined"); err != nil || f != VhostCombined {
		t.Errorf(`ParseFormat("vhost_combined") = %v, %v; want vhost_combined`, f, err)
	}
	if _, err := ParseFormat("nginx"); err == nil {
		t.Errorf(`ParseFormat("nginx") succeeded, want an error`)
	}
}

// readAll reads every record of r, keeping copies of them.
func readAll(t *testing.T, r io.Reader, f Format) ([]want, Counts, Format) {
	t.Helper()
	rd, err := NewReader(r, f)
	if err != nil {
		t.Fatal(err)
	}
	var out []want
	for rd.Next() {
		out = append(out, got(rd.Record()))
	}
	if err := rd.Err(); err != nil {
		t.Fatalf("Err() = %v", err)
	}
	return out, rd.Counts(), rd.Format()
}

func TestReaderCountsAndSkips(t *testing.T) {
	good := parseCases[Combined][0].line
	input := good + "\n\n   \nnot a log line\r\n" + good + "\r\n" + parseCases[Combined][4].line + "\n" + good // no final newline
	recs, c, f := readAll(t, strings.NewReader(input), Auto)
	if f != Combined {
		t.Errorf("format = %v, want combined", f)
	}
	if want := (Counts{Lines: 5, Parsed: 3, Unparsed: 2}); c != want {
		t.Errorf("Counts() = %+v, want %+v", c, want)
	}
	if len(recs) != 3 || recs[2].Client != "83.149.9.216" {
		t.Errorf("records = %+v", recs)
	}
}

func TestReaderLongLine(t *testing.T) {
	good := parseCases[Common][0].line
	long := strings.Repeat("x", MaxLineLength+10)
	recs, c, _ := readAll(t, strings.NewReader(good+"\n"+long+"\n"+good+"\n"), Common)
	if want := (Counts{Lines: 3, Parsed: 2, Unparsed: 1}); c != want || len(recs) != 2 {
		t.Errorf("Counts() = %+v with %d records, want %+v with 2", c, len(recs), want)
	}
}

func TestReaderGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, tc := range parseCases[Common][:3] {
		io.WriteString(zw, tc.line+"\n")
	}
	zw.Close()
	recs, c, f := readAll(t, &buf, Auto)
	if f != Common || c.Parsed != 3 || len(recs) != 3 {
		t.Errorf("gzip: format %v, counts %+v", f, c)
	}
	// A corrupt stream is an error, not a parse failure.
	bad := append([]byte{0x1f, 0x8b}, []byte("not really gzip")...)
	rd, err := NewReader(bytes.NewReader(bad), Auto)
	if err == nil {
		for rd.Next() {
		}
		err = rd.Err()
	}
	if err == nil {
		t.Error("corrupt gzip: no error")
	}
}

type errReader struct{ n int }

func (e *errReader) Read(p []byte) (int, error) {
	if e.n == 0 {
		e.n++
		return copy(p, parseCases[Common][0].line+"\n"), nil
	}
	return 0, errors.New("disk on fire")
}

func TestReaderError(t *testing.T) {
	rd, err := NewReader(&errReader{}, Common)
	if err == nil {
		n := 0
		for rd.Next() {
			n++
		}
		err = rd.Err()
	}
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Err() = %v, want the read error", err)
	}
}

// TestReadFiles reads each real excerpt and checks the counts against
// ones computed here independently, line by line.
func TestReadFiles(t *testing.T) {
	for _, tc := range []struct {
		file     string
		format   string
		unparsed int64
	}{
		{"elastic_excerpt.log", "combined", 1},
		{"elastic_apache_logs.log.gz", "combined", 1},
		{"alb.log", "alb", 0},
		{"waf.jsonl", "waf", 0},
		{"floodgate.jsonl", "floodgate", 1},
	} {
		t.Run(tc.file, func(t *testing.T) {
			name := filepath.Join("testdata", tc.file)
			lines := nonEmptyLines(t, name)
			clients := map[string]int{}
			files, err := ReadFiles([]string{name}, ReadOptions{}, func(r *Record) { clients[string(r.Client)]++ })
			if err != nil {
				t.Fatal(err)
			}
			f := files[0]
			want := Counts{Lines: int64(len(lines)), Parsed: int64(len(lines)) - tc.unparsed, Unparsed: tc.unparsed}
			if f.Format != tc.format || f.Counts != want {
				t.Errorf("ReadFiles(%s) = %s %+v, want %s %+v", tc.file, f.Format, f.Counts, tc.format, want)
			}
			// The clients, counted independently: by splitting text lines
			// and decoding JSON with encoding/json. The reader's counts
			// may miss only the unparsed lines.
			indep := map[string]int{}
			for _, l := range lines {
				indep[clientOf(t, tc.format, l)]++
			}
			missing := int64(0)
			for c, n := range indep {
				if clients[c] > n {
					t.Errorf("client %q: %d records, in %d lines", c, clients[c], n)
				}
				missing += int64(n - clients[c])
			}
			if len(clients) > len(indep) || missing != tc.unparsed {
				t.Errorf("%d clients (%d independently), %d lines' clients missing, want %d", len(clients), len(indep), missing, tc.unparsed)
			}
		})
	}
}

// clientOf finds a line's client without the package's parsers.
func clientOf(t *testing.T, format, line string) string {
	switch format {
	case "combined", "common":
		return strings.Fields(line)[0]
	case "alb":
		c := strings.Fields(line)[3]
		return c[:strings.LastIndex(c, ":")]
	case "waf":
		var v struct {
			HTTPRequest struct{ ClientIP string } `json:"httpRequest"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		return v.HTTPRequest.ClientIP
	}
	var v struct {
		Client  string `json:"client"`
		KeyHash string `json:"key_hash"`
	}
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatal(err)
	}
	if v.Client != "" {
		return v.Client
	}
	return v.KeyHash
}

// nonEmptyLines reads a (possibly gzipped) file's non-empty lines with
// the standard library only.
func nonEmptyLines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func TestReadFilesStdinAndMissing(t *testing.T) {
	in := strings.NewReader(parseCases[Common][0].line + "\n")
	n := 0
	files, err := ReadFiles([]string{"-"}, ReadOptions{Stdin: in}, func(*Record) { n++ })
	if err != nil || n != 1 || files[0].Name != "-" {
		t.Errorf("ReadFiles(-) = %+v, %v with %d records", files, err, n)
	}
	_, err = ReadFiles([]string{"testdata/does-not-exist.log"}, ReadOptions{}, func(*Record) {})
	if want := "read testdata/does-not-exist.log: no such file or directory"; err == nil || err.Error() != want {
		t.Errorf("missing file: %v, want %q (the file and why, not the system call)", err, want)
	}
	var calls int
	_, err = ReadFiles([]string{"testdata/elastic_excerpt.log"}, ReadOptions{Progress: func(done, total int64) {
		calls++
		if done != total || total == 0 {
			t.Errorf("progress %d/%d at the end", done, total)
		}
	}}, func(*Record) {})
	if err != nil || calls == 0 {
		t.Errorf("progress calls = %d, err %v", calls, err)
	}
}

// TestNextDoesNotAllocate holds the readers' budget: reading a line costs
// no allocation, in every format.
func TestNextDoesNotAllocate(t *testing.T) {
	for f, cases := range parseCases {
		line := cases[0].line + "\n"
		input := strings.Repeat(line, 3000)
		rd, err := NewReader(strings.NewReader(input), f)
		if err != nil {
			t.Fatal(err)
		}
		rd.Next() // warm up: the scratch buffers grow once
		if n := testing.AllocsPerRun(1000, func() {
			if !rd.Next() {
				t.Fatalf("%s: ran out of lines", f)
			}
		}); n != 0 {
			t.Errorf("%s: Next allocs = %v, want 0", f, n)
		}
	}
}

func BenchmarkNext(b *testing.B) {
	for _, f := range []Format{Common, Combined, VhostCombined, ALB, WAF, Floodgate} {
		line := parseCases[f][0].line + "\n"
		b.Run("format="+f.String(), func(b *testing.B) {
			rd, err := NewReader(&repeatReader{line: line}, f)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if !rd.Next() {
					b.Fatal("no record")
				}
			}
		})
	}
}

// repeatReader reads line over and over, endlessly.
type repeatReader struct {
	line string
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.line[r.off:])
		n += c
		r.off = (r.off + c) % len(r.line)
	}
	return n, nil
}

// fuzzParse checks what every parser must hold on any input: no panic,
// and a parsed record's fields are parts of the line (or decoded from
// it) with sane values.
func fuzzParse(f *testing.F, format Format) {
	for _, tc := range parseCases[format] {
		f.Add(tc.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		var rec Record
		var sc scratch
		var tc timeCache
		if !parse(format, &rec, []byte(line), &sc, &tc) {
			return
		}
		if rec.Status < 0 || rec.Status > 999 {
			t.Errorf("Status = %d", rec.Status)
		}
		if rec.Bytes < -1 {
			t.Errorf("Bytes = %d", rec.Bytes)
		}
		if rec.Duration < 0 {
			t.Errorf("Duration = %v", rec.Duration)
		}
		// A common or combined line whose second field is an address
		// and first is not starts with a virtual host, not the client.
		if format == Common || format == Combined {
			if f := strings.SplitN(line, " ", 3); len(f) == 3 {
				_, err1 := netip.ParseAddr(f[0])
				_, err2 := netip.ParseAddr(f[1])
				if err1 != nil && err2 == nil {
					t.Errorf("client %q before the address %q", f[0], f[1])
				}
			}
		}
		// WAF's Unix milliseconds, multiplied into nanoseconds, must
		// neither wrap around nor go before 1970.
		if format == WAF && (rec.Time < 0 || rec.Time%1e6 != 0) {
			t.Errorf("Time = %d", rec.Time)
		}
		if format != WAF && format != Floodgate {
			for _, b := range [][]byte{rec.Client, rec.Method, rec.Target, rec.Host, rec.UserAgent} {
				if !strings.Contains(line, string(b)) {
					t.Errorf("field %q is not in the line", b)
				}
			}
			if len(rec.Client) == 0 {
				t.Error("empty client")
			}
		}
		// Parsing the same line again gives the same record.
		first := got(&rec)
		var rec2 Record
		var sc2 scratch
		parse(format, &rec2, []byte(line), &sc2, &tc)
		if diff := cmp.Diff(got(&rec2), first); diff != "" {
			t.Errorf("second parse differs (-second +first):\n%s", diff)
		}
	})
}

func FuzzCommon(f *testing.F)        { fuzzParse(f, Common) }
func FuzzCombined(f *testing.F)      { fuzzParse(f, Combined) }
func FuzzVhostCombined(f *testing.F) { fuzzParse(f, VhostCombined) }
func FuzzALB(f *testing.F)           { fuzzParse(f, ALB) }
func FuzzWAF(f *testing.F)           { fuzzParse(f, WAF) }
func FuzzFloodgate(f *testing.F)     { fuzzParse(f, Floodgate) }

// FuzzIsIP holds isIP to what netip.ParseAddr accepts.
func FuzzIsIP(f *testing.F) {
	for _, s := range []string{"", "1.2.3.4", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..2.3",
		"::", "::1", "2001:db8::1", "2001:db8:0:0:0:0:0:1", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::8",
		"::ffff:192.0.2.1", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "fe80::1%eth0", "fe80::1%", "%eth0", "12345::",
		"1:::2", "1::2::3", ":1", "1:", "www.example.com:443", "1.2.3.4:80", "[::1]", "-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := netip.ParseAddr(s)
		if got := isIP([]byte(s)); got != (err == nil) {
			t.Errorf("isIP(%q) = %v; netip.ParseAddr: %v", s, got, err)
		}
	})
}

// FuzzReader feeds whole inputs, detection included: never a panic, and
// the counts add up.
func FuzzReader(f *testing.F) {
	for _, cases := range parseCases {
		f.Add(cases[0].line + "\n" + cases[len(cases)-1].line + "\n")
	}
	f.Fuzz(func(t *testing.T, input string) {
		rd, err := NewReader(strings.NewReader(input), Auto)
		if err != nil {
			return // a gzip header that is not one
		}
		n := int64(0)
		for rd.Next() {
			n++
		}
		c := rd.Counts()
		if c.Parsed != n || c.Lines != c.Parsed+c.Unparsed {
			t.Errorf("Counts() = %+v after %d records", c, n)
		}
	})
}

// TestReaderByteOrderMark checks that a UTF-8 byte order mark at the
// start of a log, which Windows tools and some editors write, is not read
// as part of the first line: the first record is the same as the second,
// in every format, detected or given, compressed or not.
func TestReaderByteOrderMark(t *testing.T) {
	const bom = "\xef\xbb\xbf"
	for f, cases := range parseCases {
		line := cases[0].line
		for _, tc := range []struct {
			name   string
			format Format
			gzip   bool
		}{
			{"detected", Auto, false},
			{"given", f, false},
			{"detected, gzip", Auto, true},
		} {
			t.Run(f.String()+"/"+tc.name, func(t *testing.T) {
				input := []byte(bom + line + "\n" + line + "\n")
				if tc.gzip {
					var buf bytes.Buffer
					zw := gzip.NewWriter(&buf)
					zw.Write(input)
					zw.Close()
					input = buf.Bytes()
				}
				recs, c, got := readAll(t, bytes.NewReader(input), tc.format)
				if got != f || c != (Counts{Lines: 2, Parsed: 2}) {
					t.Fatalf("read as %v with %+v, want %v with 2 lines parsed", got, c, f)
				}
				if diff := cmp.Diff(recs[0], recs[1]); diff != "" {
					t.Errorf("first record differs from the second (-first +second):\n%s", diff)
				}
			})
		}
	}
}

// TestFirstUnparsedLineNumber checks that the line reported as the first
// not parsed is the file's own line number, blank lines included, so that
// an editor or `sed -n Np` finds it; Lines counts only the non-blank
// lines.
func TestFirstUnparsedLineNumber(t *testing.T) {
	good := parseCases[Common][0].line
	long := strings.Repeat("x", MaxLineLength+10)
	for _, tc := range []struct {
		name  string
		input string
		want  Counts
		line  int64
	}{
		{"blank lines before", good + "\n" + good + "\n\n\n\nbad\n", Counts{Lines: 3, Parsed: 2, Unparsed: 1}, 6},
		{"leading blank lines", "\n\nbad\n" + good + "\n", Counts{Lines: 2, Parsed: 1, Unparsed: 1}, 3},
		{"spaces and CRLF", good + "\r\n   \r\n\t\r\n" + good + "\r\nbad\r\n", Counts{Lines: 3, Parsed: 2, Unparsed: 1}, 5},
		{"last line without newline", good + "\n\n" + "bad", Counts{Lines: 2, Parsed: 1, Unparsed: 1}, 3},
		{"over-long line", good + "\n\n" + long + "\nbad\n", Counts{Lines: 3, Parsed: 1, Unparsed: 2}, 3},
		{"after an over-long line", good + "\n" + long + "\n" + good + "\n\nbad\n", Counts{Lines: 4, Parsed: 2, Unparsed: 2}, 2},
		{"all parse", good + "\n\n" + good + "\n", Counts{Lines: 2, Parsed: 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "access.log")
			if err := os.WriteFile(name, []byte(tc.input), 0o644); err != nil {
				t.Fatal(err)
			}
			files, err := ReadFiles([]string{name}, ReadOptions{Format: Common}, func(*Record) {})
			if err != nil {
				t.Fatal(err)
			}
			if f := files[0]; f.Counts != tc.want || f.FirstUnparsedLine != tc.line {
				t.Errorf("ReadFiles = %+v, first unparsed line %d; want %+v, line %d", f.Counts, f.FirstUnparsedLine, tc.want, tc.line)
			}
		})
	}
}

// TestDetectAfterLongLines checks that the format of a log whose first
// lines are long is still detected from the lines that follow, and that
// a long line under MaxLineLength is then parsed like any other.
func TestDetectAfterLongLines(t *testing.T) {
	good := parseCases[Combined][0].line
	// A combined line whose path alone is n bytes long.
	longPath := func(n int) string {
		return `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /` + strings.Repeat("a", n) + ` HTTP/1.1" 200 1 "-" "curl/8"`
	}
	rest := strings.Repeat(good+"\n", 50)
	for _, tc := range []struct {
		name  string
		input string
		gzip  bool
		want  Counts
		line  int64 // the first unparsed line
	}{
		{"70,000-byte first line", longPath(70000) + "\n" + rest, false, Counts{Lines: 51, Parsed: 51}, 0},
		{"70,000-byte first line, gzip", longPath(70000) + "\n" + rest, true, Counts{Lines: 51, Parsed: 51}, 0},
		{"blank lines, then a long line", "\n\n" + longPath(200000) + "\n" + rest, false, Counts{Lines: 51, Parsed: 51}, 0},
		{"first line just under the limit", longPath(MaxLineLength-200) + "\n" + rest, false, Counts{Lines: 51, Parsed: 51}, 0},
		{"first line over the limit", longPath(MaxLineLength+10) + "\n" + rest, false, Counts{Lines: 51, Parsed: 50, Unparsed: 1}, 1},
		{"two lines over the limit", longPath(MaxLineLength+10) + "\n" + longPath(3*MaxLineLength) + "\n" + rest, false, Counts{Lines: 52, Parsed: 50, Unparsed: 2}, 1},
		{"over the limit, then under", longPath(MaxLineLength+10) + "\n\n" + longPath(MaxLineLength-200) + "\n" + rest, false, Counts{Lines: 52, Parsed: 51, Unparsed: 1}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(tc.input)
			if tc.gzip {
				var buf bytes.Buffer
				zw := gzip.NewWriter(&buf)
				zw.Write(data)
				zw.Close()
				data = buf.Bytes()
			}
			name := filepath.Join(t.TempDir(), "access.log")
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
			files, err := ReadFiles([]string{name}, ReadOptions{}, func(*Record) {})
			if err != nil {
				t.Fatal(err)
			}
			if f := files[0]; f.Format != "combined" || f.Counts != tc.want || f.FirstUnparsedLine != tc.line {
				t.Errorf("ReadFiles = %s %+v, first unparsed line %d; want combined %+v, line %d", f.Format, f.Counts, f.FirstUnparsedLine, tc.want, tc.line)
			}
		})
	}
}

// TestReadFilesErrorsNameTheFileOnce checks the messages of files that
// cannot be read: each names the file once, with the reason, and not the
// system call.
func TestReadFilesErrorsNameTheFileOnce(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.log")
	if err := os.WriteFile(good, []byte(parseCases[Common][0].line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An open directory as standard input: opened, but not readable.
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		name  string
		files []string
		stdin io.Reader
		want  string
	}{
		{"directory", []string{dir}, nil, "read " + dir + ": is a directory"},
		{"directory after a file", []string{good, dir}, nil, "read " + dir + ": is a directory"},
		{"missing", []string{filepath.Join(dir, "nope.log")}, nil, "read " + filepath.Join(dir, "nope.log") + ": no such file or directory"},
		{"unreadable standard input", []string{"-"}, d, "read -: is a directory"},
		{"read error", []string{"-"}, &errReader{n: 1}, "read -: disk on fire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFiles(tc.files, ReadOptions{Stdin: tc.stdin}, func(*Record) {})
			if err == nil || err.Error() != tc.want {
				t.Errorf("ReadFiles(%q) error = %v, want %q", tc.files, err, tc.want)
			}
		})
	}
}

// TestNoRecords checks the error of a reading that gave no record: it
// names the files that were empty, which no other message does.
func TestNoRecords(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.log", "")
	blank := write("blank.log", "\n  \n\r\n")
	bad := write("bad.log", "not a log line\n")
	good := write("good.log", parseCases[Common][0].line+"\n")
	var many []string
	for i := range 5 {
		many = append(many, write(fmt.Sprintf("empty%d.log", i), ""))
	}
	const none = "no line of the input could be read as a log record"
	for _, tc := range []struct {
		name  string
		files []string
		stdin string
		want  string // "" for no error
	}{
		{"one empty file", []string{empty}, "", none + ": " + empty + " is empty"},
		{"blank lines only", []string{blank}, "", none + ": " + blank + " is empty"},
		{"empty standard input", []string{"-"}, "", none + ": standard input is empty"},
		{"empty and unparsed", []string{empty, bad, blank}, "", none + ": " + empty + " and " + blank + " are empty"},
		{"unparsed only", []string{bad}, "", none},
		{"many empty files", many, "", none + ": " + many[0] + ", " + many[1] + ", " + many[2] + " and 2 other files are empty"},
		{"one file parsed", []string{empty, good}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files, err := ReadFiles(tc.files, ReadOptions{Stdin: strings.NewReader(tc.stdin)}, func(*Record) {})
			if err != nil {
				t.Fatal(err)
			}
			err = NoRecords(files)
			if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || err != nil && got != tc.want {
				t.Errorf("NoRecords = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestReadVhostCombined reads a Debian other_vhosts_access.log: detected
// as vhost_combined, each line's client is the address after the virtual
// host, and read as combined no line parses, rather than every line
// giving the virtual host as its client.
func TestReadVhostCombined(t *testing.T) {
	log := `www.example.com:443 203.0.113.9 - - [10/Oct/2026:13:55:36 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8"
www.example.com:443 203.0.113.10 - - [10/Oct/2026:13:55:37 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8"
shop.example.com:80 2001:db8::7 - alice [10/Oct/2026:13:55:38 +0000] "GET /b HTTP/1.1" 404 0 "-" "curl/8"
www.example.com:443 203.0.113.9 - - [10/Oct/2026:13:55:39 +0000] "GET /c HTTP/1.1" 200 5 "-" "curl/8"
`
	name := filepath.Join(t.TempDir(), "other_vhosts_access.log")
	if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		format  Format
		want    string // the format read
		counts  Counts
		clients map[string]int // client@host: requests
	}{
		{Auto, "vhost_combined", Counts{Lines: 4, Parsed: 4},
			map[string]int{"203.0.113.9@www.example.com": 2, "203.0.113.10@www.example.com": 1, "2001:db8::7@shop.example.com": 1}},
		{VhostCombined, "vhost_combined", Counts{Lines: 4, Parsed: 4},
			map[string]int{"203.0.113.9@www.example.com": 2, "203.0.113.10@www.example.com": 1, "2001:db8::7@shop.example.com": 1}},
		{Combined, "combined", Counts{Lines: 4, Unparsed: 4}, map[string]int{}},
		{Common, "common", Counts{Lines: 4, Unparsed: 4}, map[string]int{}},
	} {
		t.Run(tc.format.String(), func(t *testing.T) {
			clients := map[string]int{}
			files, err := ReadFiles([]string{name}, ReadOptions{Format: tc.format}, func(r *Record) {
				clients[string(r.Client)+"@"+string(r.Host)]++
			})
			if err != nil {
				t.Fatal(err)
			}
			if f := files[0]; f.Format != tc.want || f.Counts != tc.counts {
				t.Errorf("ReadFiles = %s %+v, want %s %+v", f.Format, f.Counts, tc.want, tc.counts)
			}
			if diff := cmp.Diff(clients, tc.clients); diff != "" {
				t.Errorf("clients (-got +want):\n%s", diff)
			}
		})
	}
}

// TestMaxLineLength checks the bound exactly: a line of MaxLineLength
// bytes is parsed whatever its line end (LF, CRLF, none at the end of the
// log), first (where the format is detected) or later; one byte more is
// not.
func TestMaxLineLength(t *testing.T) {
	good := parseCases[Combined][0].line
	// A combined line of exactly n bytes.
	line := func(n int) string {
		head, tail := `1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /`, ` HTTP/1.1" 200 1 "-" "curl/8"`
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	for _, tc := range []struct {
		name   string
		n      int
		eol    string
		parsed bool
	}{
		{"MaxLineLength, LF", MaxLineLength, "\n", true},
		{"MaxLineLength, CRLF", MaxLineLength, "\r\n", true},
		{"MaxLineLength, last, no line end", MaxLineLength, "", true},
		{"MaxLineLength+1, LF", MaxLineLength + 1, "\n", false},
		{"MaxLineLength+1, CRLF", MaxLineLength + 1, "\r\n", false},
	} {
		for _, first := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, first %v", tc.name, first), func(t *testing.T) {
				input := good + "\n" + line(tc.n) + tc.eol
				want := Counts{Lines: 2, Parsed: 2}
				if first {
					input = line(tc.n) + tc.eol
					want = Counts{Lines: 1, Parsed: 1}
					if tc.eol != "" {
						input += good + "\n"
						want = Counts{Lines: 2, Parsed: 2}
					}
				}
				if !tc.parsed {
					want.Parsed, want.Unparsed = want.Parsed-1, 1
				}
				name := filepath.Join(t.TempDir(), "access.log")
				if err := os.WriteFile(name, []byte(input), 0o644); err != nil {
					t.Fatal(err)
				}
				files, err := ReadFiles([]string{name}, ReadOptions{}, func(*Record) {})
				if err != nil {
					t.Fatal(err)
				}
				if f := files[0]; f.Format != "combined" || f.Counts != want {
					t.Errorf("ReadFiles = %s %+v, want combined %+v", f.Format, f.Counts, want)
				}
			})
		}
	}
}
