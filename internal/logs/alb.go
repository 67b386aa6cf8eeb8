package logs

import (
	"bytes"
	"time"
)

// AWS Application Load Balancer access logs: space-separated fields, some
// double-quoted, beginning
//
//	type time elb client:port target:port request_processing_time
//	target_processing_time response_processing_time elb_status_code
//	target_status_code received_bytes sent_bytes "request" "user_agent"
//	ssl_cipher ssl_protocol target_group_arn "trace_id" "domain_name"
//	"chosen_cert_arn" matched_rule_priority request_creation_time …
//
// where request is "GET http://www.example.com:80/path?q HTTP/1.1". time
// is when the load balancer sent the response; the request arrived at
// request_creation_time, which is the Record's Time. A line without it
// (cut short, or written before the field existed) arrives at time less
// the three processing times that are known (not -1). The other fields
// after user_agent (TLS, target group, trace id, …) are ignored.

// field returns the field starting at line[i], quoted or not, and the
// index of the next field (past one space), or len(line) at the end.
func field(line []byte, i int) (f []byte, next int, ok bool) {
	if i >= len(line) {
		return nil, 0, false
	}
	if line[i] == '"' {
		f, i, ok = quoted(line, i)
		if !ok {
			return nil, 0, false
		}
	} else {
		sp := bytes.IndexByte(line[i:], ' ')
		if sp < 0 {
			return line[i:], len(line), true
		}
		f, i = line[i:i+sp], i+sp
	}
	switch {
	case i == len(line):
		return f, i, true
	case line[i] == ' ':
		return f, i + 1, true
	}
	return nil, 0, false
}

var albTypes = [][]byte{[]byte("http"), []byte("https"), []byte("h2"), []byte("grpcs"), []byte("ws"), []byte("wss")}

func parseALB(r *Record, line []byte, tc *timeCache) bool {
	var f [14][]byte
	i := 0
	for k := range f {
		var ok bool
		if f[k], i, ok = field(line, i); !ok {
			return false
		}
	}
	known := false
	for _, t := range albTypes {
		if bytes.Equal(f[0], t) {
			known = true
			break
		}
	}
	if !known {
		return false
	}
	t, ok := tc.parse(f[1], parseRFC3339)
	if !ok {
		return false
	}
	r.Time = albArrival(line, i, t, &f)
	// client:port, or [v6]:port
	c := f[3]
	switch {
	case len(c) > 0 && c[0] == '[':
		end := bytes.IndexByte(c, ']')
		if end < 0 {
			return false
		}
		c = c[1:end]
	default:
		if colon := bytes.LastIndexByte(c, ':'); colon > 0 {
			c = c[:colon]
		}
	}
	if len(c) == 0 || (len(c) == 1 && c[0] == '-') {
		return false
	}
	r.Client = c
	if st := digits(f[8]); st >= 0 && len(f[8]) == 3 {
		r.Status = st
	}
	r.NoUpstreamAnswer = len(f[9]) == 1 && f[9][0] == '-'
	if n, ok := bigDigits(f[11]); ok {
		r.Bytes = n
	}
	if d, ok := decimalDuration(f[6], int64(time.Second)); ok { // -1 when the target did not answer
		r.Duration = time.Duration(d)
	}
	r.Method, r.Target, r.Host = splitAbsoluteRequest(f[12])
	r.HasUserAgent = true
	if ua := f[13]; !(len(ua) == 1 && ua[0] == '-') {
		r.UserAgent = ua
	}
	return true
}

// albRequestCreationTime is the index of request_creation_time among an
// ALB line's fields.
const albRequestCreationTime = 21

// albArrival returns when the request of an ALB line arrived: its
// request_creation_time, found from line[i] (the field after user_agent)
// on, or else sent (the line's time) less the processing times f gives.
func albArrival(line []byte, i int, sent int64, f *[14][]byte) int64 {
	var fl []byte
	ok := true
	for k := len(f); k <= albRequestCreationTime && ok; k++ {
		fl, i, ok = field(line, i)
	}
	if ok {
		if t, ok := parseRFC3339(fl); ok {
			return t
		}
	}
	for _, p := range f[5:8] {
		if d, ok := decimalDuration(p, int64(time.Second)); ok && sent-d >= minUnixNano {
			sent -= d
		}
	}
	return sent
}

// splitAbsoluteRequest splits "GET http://host:80/path?q HTTP/1.1" into
// method, origin-form target ("/path?q") and host without port.
func splitAbsoluteRequest(req []byte) (method, target, host []byte) {
	method, u := splitRequest(req)
	if method == nil {
		return nil, nil, nil
	}
	if len(method) == 1 && method[0] == '-' {
		return nil, nil, nil
	}
	if k := bytes.Index(u, []byte("://")); k >= 0 {
		u = u[k+3:]
		slash := bytes.IndexByte(u, '/')
		if slash < 0 {
			host, u = u, []byte("/")
		} else {
			host, u = u[:slash], u[slash:]
		}
		host = hostWithoutPort(host)
	}
	if len(u) == 0 || u[0] != '/' {
		return method, nil, host
	}
	return method, u, host
}

func hostWithoutPort(h []byte) []byte {
	if len(h) > 0 && h[0] == '[' {
		if end := bytes.IndexByte(h, ']'); end > 0 {
			return h[1:end]
		}
		return h
	}
	if colon := bytes.LastIndexByte(h, ':'); colon >= 0 && bytes.IndexByte(h[:colon], ':') < 0 {
		return h[:colon]
	}
	return h
}
