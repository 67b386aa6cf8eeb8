package logs

import (
	"bytes"
	"time"

	"github.com/floodgate/floodgate/internal/uaclass"
)

// AWS WAF logs: one JSON object a line, with "timestamp" (Unix
// milliseconds, 1970 to 2261), "action", "terminatingRuleId", "terminatingRuleType",
// "responseCodeSent" and "httpRequest": {"clientIp", "uri", "args",
// "httpMethod", "headers": [{"name", "value"}]}. A request blocked by a
// rate-based rule (terminatingRuleType RATE_BASED) has BlockedBy set to
// the rule's id.

func parseWAF(r *Record, line []byte, s *scratch) bool {
	o := newObject(line, 0)
	haveTime, haveReq := false, false
	var action, ruleID, ruleType []byte
	for {
		k, v, ok := o.next()
		if !ok {
			break
		}
		switch string(k) {
		case "timestamp":
			// Unix milliseconds. Before 1970 there was no AWS WAF; past
			// maxUnixMilli the nanoseconds would not fit in an int64, and
			// the other formats refuse those years too.
			ms, ok := jsonInt(v)
			if !ok || ms < 0 || ms > maxUnixMilli {
				return false
			}
			r.Time, haveTime = ms*1e6, true
		case "action":
			action, _ = s.str(v)
		case "terminatingRuleId":
			ruleID, _ = s.str(v)
		case "terminatingRuleType":
			ruleType, _ = s.str(v)
		case "responseCodeSent":
			if n, ok := jsonInt(v); ok && n > 0 && n < 1000 {
				r.Status = int(n)
			}
		case "httpRequest":
			if !parseWAFRequest(r, v, s) {
				return false
			}
			haveReq = true
		}
	}
	if !o.end() || !haveTime || !haveReq {
		return false
	}
	if string(action) == "BLOCK" && string(ruleType) == "RATE_BASED" && len(ruleID) > 0 {
		r.BlockedBy = ruleID
	}
	return true
}

func parseWAFRequest(r *Record, v []byte, s *scratch) bool {
	o := newObject(v, 0)
	var uri, args []byte
	for {
		k, v, ok := o.next()
		if !ok {
			break
		}
		switch string(k) {
		case "clientIp":
			r.Client, _ = s.str(v)
		case "uri":
			uri, _ = s.str(v)
		case "args":
			args, _ = s.str(v)
		case "httpMethod":
			r.Method, _ = s.str(v)
		case "headers":
			r.HasUserAgent = true
			a := newArray(v)
			for {
				h, ok := a.next()
				if !ok {
					break
				}
				var name, value []byte
				ho := newObject(h, 0)
				for {
					hk, hv, ok := ho.next()
					if !ok {
						break
					}
					switch string(hk) {
					case "name":
						name, _ = s.str(hv)
					case "value":
						value, _ = s.str(hv)
					}
				}
				switch {
				case bytes.EqualFold(name, []byte("user-agent")):
					r.UserAgent = value
				case bytes.EqualFold(name, []byte("host")):
					r.Host = hostWithoutPort(value)
				}
			}
		}
	}
	if o.bad || len(r.Client) == 0 {
		return false
	}
	if len(uri) > 0 && uri[0] == '/' {
		if len(args) == 0 {
			r.Target = uri
		} else {
			start := len(s.buf)
			s.buf = append(s.buf, uri...)
			s.buf = append(s.buf, '?')
			s.buf = append(s.buf, args...)
			r.Target = s.buf[start:len(s.buf):len(s.buf)]
		}
	}
	return true
}

// floodgate's own logs, JSON lines from log/slog and telemetry.AccessLog:
//
//	decision log: {"time","level","msg":"decision","rule","action","decision","route",
//	               "method","path","ua_class","key_type","key_hash","limit","remaining","retry_after_s"}
//	access log:   {"time","msg":"access","method","path","status","route","duration_ms",
//	               "ua","ua_class","client","bytes","session","api_client","listener",
//	               "blocked_by","would_block":[…]}
//
// A record with "rule" and "decision" is a decision; one with "client" is
// an access record; other records of the same log (warnings, start-up
// messages) do not parse.

func parseFloodgate(r *Record, line []byte, s *scratch) bool {
	o := newObject(line, 0)
	haveTime := false
	var keyHash, client []byte
	for {
		k, v, ok := o.next()
		if !ok {
			break
		}
		switch string(k) {
		case "time":
			ts, ok := s.str(v)
			if !ok {
				return false
			}
			if r.Time, ok = parseRFC3339(ts); !ok {
				return false
			}
			haveTime = true
		case "rule":
			r.Rule, _ = s.str(v)
		case "decision":
			r.Decision, _ = s.str(v)
		case "route":
			r.Route, _ = s.str(v)
		case "method":
			r.Method, _ = s.str(v)
		case "path":
			r.Target, _ = s.str(v)
			r.PathDecoded = true
		case "key_hash":
			keyHash, _ = s.str(v)
		case "client":
			client, _ = s.str(v)
		case "status":
			if n, ok := jsonInt(v); ok && n > 0 && n < 1000 {
				r.Status = int(n)
			}
		case "bytes":
			if n, ok := jsonInt(v); ok && n >= 0 {
				r.Bytes = n
			}
		case "duration_ms":
			if d, ok := decimalDuration(v, int64(time.Millisecond)); ok {
				r.Duration = time.Duration(d)
			}
		case "ua":
			r.UserAgent, _ = s.str(v)
			r.HasUserAgent = true
		case "ua_class":
			if c, ok := s.str(v); ok {
				r.Class, _ = uaclass.Parse(string(c))
			}
		case "listener":
			l, _ := s.str(v)
			r.Internal = string(l) == "internal"
			r.ForProxy = string(l) == "decide"
		case "session":
			r.Session, _ = s.str(v)
		case "api_client":
			r.APIClient, _ = s.str(v)
		case "blocked_by":
			r.BlockedBy, _ = s.str(v)
		case "would_block":
			a := newArray(v)
			for {
				e, ok := a.next()
				if !ok {
					break
				}
				if name, ok := s.str(e); ok && len(name) > 0 {
					r.WouldBlock = append(r.WouldBlock, name)
				}
			}
		}
	}
	if !o.end() || !haveTime {
		return false
	}
	switch {
	case len(r.Rule) > 0 && len(r.Decision) > 0:
		r.Kind = KindDecision
		r.Client = keyHash
	case len(client) > 0:
		r.Kind = KindRequest
		r.Client = client
	default:
		return false
	}
	r.ClientHashed = true
	return true
}
