package config

import (
	"reflect"
	"strings"
)

// Defaults of the fields that have one; ApplyDefaults sets them.
const (
	DefaultListen      = "127.0.0.1:8080"
	DefaultAdminListen = "127.0.0.1:9090"
	DefaultIPv4Prefix  = 32
	DefaultIPv6Prefix  = 64
	DefaultMaxKeys     = 1 << 20
	DefaultWhen        = "true"
	DefaultAlgorithm   = "sliding_window"
	DefaultKey         = "ip"
	DefaultRouteName   = "default"

	DefaultReadHeaderTimeout = "10s"
	DefaultIdleTimeout       = "120s"
	DefaultShutdownGrace     = "30s"
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultStoreTimeout      = "100ms"

	// The upstream connection reuse modes (upstreams.NAME.connection_reuse).
	ReuseShared    = "shared"
	ReusePerClient = "per_client"
	ReuseNone      = "none"

	DefaultMaxBodyBytes       = 10 << 20
	DefaultMaxURIBytes        = 8 << 10
	DefaultBodyReadTimeout    = "60s"
	DefaultWriteIdleTimeout   = "60s"
	DefaultRequestBufferBytes = 64 << 10
	DefaultReloadSettle       = "2s"

	// The values of a route's request_buffering.
	BufferingOn  = "on"
	BufferingOff = "off"

	// The server engines (server.engine).
	EngineFloodgate = "floodgate"
	EngineNetHTTP   = "net/http"

	// Failure policies (store.failure_policy, rules[].failure_policy).
	FailOpen   = "fail_open"
	FailClosed = "fail_closed"
)

// ApplyDefaults sets every field that is empty (or zero) and has a
// default to that default, and canonicalises values that may be written
// in any case (client_ip.header, route methods). It is idempotent.
//
// Defaults: mode enforce; listen 127.0.0.1:8080; admin.listen
// 127.0.0.1:9090; client_ip.header X-Forwarded-For, ipv4_prefix 32,
// ipv6_prefix 64; store.url memory, store.max_keys 1048576; for each rule
// when "true" and action block, and for block and count rules key [ip]
// and algorithm sliding_window; responses.ratelimit_headers always;
// log.level info, log.decisions limited. With no routes and exactly one
// upstream, one route {name: default, path: /, upstream: that upstream}.
//
// ApplyDefaults does not validate: call File.Validate for that, which
// applies the defaults to a copy first. A field the file writes as 0 or ""
// gets its default here too, but File.Validate, before or after, still
// reports it as written when that is out of range.
func (c *Config) ApplyDefaults() {
	setDefault(&c.Mode, ModeEnforce)
	setDefault(&c.Listen, DefaultListen)
	setDefault(&c.Admin.Listen, DefaultAdminListen)
	setDefault(&c.Server.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&c.Server.IdleTimeout, DefaultIdleTimeout)
	setDefault(&c.Server.ShutdownGrace, DefaultShutdownGrace)
	setDefault(&c.Server.Engine, EngineFloodgate)
	setDefault(&c.Server.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setDefault(&c.Server.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&c.Server.MaxURIBytes, DefaultMaxURIBytes)
	setDefault(&c.Server.BodyReadTimeout, DefaultBodyReadTimeout)
	setDefault(&c.Server.WriteIdleTimeout, DefaultWriteIdleTimeout)
	setDefault(&c.Server.RequestBufferBytes, DefaultRequestBufferBytes)

	setDefault(&c.ClientIP.Header, HeaderXForwardedFor)
	for _, h := range []string{HeaderXForwardedFor, HeaderForwarded} {
		if strings.EqualFold(c.ClientIP.Header, h) {
			c.ClientIP.Header = h
		}
	}
	setDefault(&c.ClientIP.IPv4Prefix, DefaultIPv4Prefix)
	setDefault(&c.ClientIP.IPv6Prefix, DefaultIPv6Prefix)

	setDefault(&c.Store.URL, StoreMemory)
	setDefault(&c.Store.MaxKeys, DefaultMaxKeys)
	setDefault(&c.Store.Timeout, DefaultStoreTimeout)
	setDefault(&c.Store.FailurePolicy, FailOpen)

	if len(c.Routes) == 0 && len(c.Upstreams) == 1 {
		for name := range c.Upstreams {
			c.Routes = []Route{{Name: DefaultRouteName, Path: "/", Upstream: name}}
		}
	}
	for i := range c.Routes {
		for j, m := range c.Routes[i].Methods {
			c.Routes[i].Methods[j] = strings.ToUpper(m)
		}
	}

	for i := range c.Rules {
		r := &c.Rules[i]
		setDefault(&r.When, DefaultWhen)
		setDefault(&r.Action, ActionBlock)
		if r.Action == ActionBlock || r.Action == ActionCount {
			if r.Key == nil { // an explicit [] means one global counter
				r.Key = []string{DefaultKey}
			}
			setDefault(&r.Algorithm, DefaultAlgorithm)
		}
	}

	c.applyOpenverseDefaults()
	setDefault(&c.Responses.RateLimitHeaders, RateLimitHeadersAlways)
	setDefault(&c.Log.Level, "info")
	setDefault(&c.Log.Decisions, LogDecisionsLimited)
	setDefault(&c.Log.Access, "none")
	setDefault(&c.Reload.Settle, DefaultReloadSettle)
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

// clone returns a deep copy of c, so that ApplyDefaults on the copy
// leaves c as it was. It copies by reflection, so fields added to Config
// later are copied too.
func (c *Config) clone() Config {
	var d Config
	deepCopy(reflect.ValueOf(&d).Elem(), reflect.ValueOf(c).Elem())
	return d
}

func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		for it := src.MapRange(); it.Next(); {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, it.Value())
			m.SetMapIndex(it.Key(), v)
		}
		dst.Set(m)
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	default:
		dst.Set(src)
	}
}
