// Package config defines floodgate's configuration file: its types, a
// strict loader that keeps line numbers, ${VAR} expansion, environments,
// defaults, and a pure validation that reports every problem at once.
//
// # The file
//
// One YAML document, a mapping of these sections (docs/configuration.md
// lists every key, its default and its allowed values):
//
//	mode: enforce                 # or log-only
//	listen: 127.0.0.1:8080
//	admin: {listen: 127.0.0.1:9090}
//	client_ip: {trusted_proxies: [10.0.0.0/8], header: X-Forwarded-For}
//	store: {url: memory}
//	upstreams:
//	  api: {url: http://127.0.0.1:8081}
//	routes:                       # first match wins; default: / to the only upstream
//	  - {name: api, path: "/api/{rest...}", upstream: api, rewrite: "/v1/{rest...}"}
//	rules:                        # evaluated in order
//	  - name: rate-limit-ip
//	    key: [ip]
//	    limits: [1500/5m]
//	    retry_after: 300s
//	responses: {cors: {allow_origin: "*", expose_headers: [Retry-After]}}
//	log: {level: info, decisions: limited}
//	environments:                 # optional overlays, one selected at load
//	  staging:
//	    rules: [{name: rate-limit-ip, limits: [150/5m]}]
//
// Unknown keys are errors, at any depth. Top-level keys starting with
// "x-" are ignored, so that they can hold YAML anchors for aliases and
// merge keys ("<<") elsewhere; aliases may add at most 10000 nodes, which
// stops "billion laughs" documents. A file is at most MaxFileSize bytes.
//
// # Variables
//
// After parsing, every scalar value (not key) is expanded: ${VAR} is the
// variable's value and a problem if it is unset; ${VAR:-default} is the
// default when VAR is unset or empty; $$ is a literal $; a $ followed by
// anything else is kept. A value is never expanded twice, and it cannot
// add YAML structure: "a: b" in a variable is a string. After expansion a
// value is typed again, so "${PORT}" can fill an integer field, and an
// empty result leaves the field unset (its default applies). Inside a
// flow collection ([ ] or { }) quote a value that holds a reference.
//
// # Environments
//
// The top-level environments mapping maps names (lower-case letters,
// digits, _ and -) to partial documents. Loading with an environment
// applies it to the rest of the file: mappings merge key by key; lists of
// named items (routes, rules) merge item by item by name; any other value
// (scalars, other lists, a rule's message) replaces the base's; null
// unsets. An environment changes what the base defines but cannot add
// upstreams, routes or rules, so that a misspelt name is a problem rather
// than a new rule. Unknown keys and names are reported in every
// environment, applied or not; variables only in the effective document.
//
// # Field paths and problems
//
// Every problem is a Problem: file, line, field path such as
// "rules[2].limits[0]" (see File), what is wrong and, for closed sets,
// what is allowed. Load and Parse report syntax, unknown and duplicate
// keys, type mismatches and variables; File.Validate reports the rest;
// later stages (rule compilation) add theirs with File.Problem. Problems
// joins them, sorted by line.
//
// A Config as loaded is plain data: strings and lists as written, after
// expansion, without defaults (Config.ApplyDefaults). Package rules
// compiles it into what the request path uses, with the parsers exported
// here (ParseKey, ParseRoutePattern, ParseRewrite, ParseRetryAfter,
// ParseLimit, ParseTrustedProxy); nothing here is parsed per request.
package config
