package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/textproto"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/ratelimit"
)

func init() {
	register("diff", 40, "--config FILE ENV_A ENV_B", runDiff)
}

// thresholdPath matches the fields that are thresholds: a rule's limits,
// its candidate thresholds, and the limits of an API client plan, which
// are the limits of the rules with limits_from: plan.
var thresholdPath = regexp.MustCompile(`^(rules\[[^\]]+\]\.(limits|candidates)|api_clients\.plans(\.[A-Za-z0-9_-]+|\["[^"]*"\]))\[\d+\]$`)

// runDiff prints every difference between two environments' effective
// configurations and exits 0 only when all of them are thresholds (the
// N/WINDOW limits, candidates and plan limits present in both), so a
// check in CI proves that staging and production are "identical apart
// from thresholds". An environment with problems is compared with
// nothing: every problem of each is printed as validate prints it, and
// diff fails as validate does.
func runDiff(_ context.Context, env environ, args []string) error {
	fs := newFlags(env, "diff", "--config FILE ENV_A ENV_B")
	file := fs.String("config", "", "configuration `file` (required)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *file == "" {
		return usageError{errors.New("--config is required")}
	}
	if len(pos) != 2 {
		return usageError{errors.New("want two environment names, such as: staging production")}
	}
	var flat [2][]field
	var shown [2]map[string]string
	broken := false
	for i, name := range pos {
		f, _, problems, err := serveFlags{file: *file, env: name}.load(env)
		if err != nil {
			return err
		}
		// Compiled as validate and serve compile it: a file one of the
		// environments cannot serve is no parity proven, whatever else
		// the two have in common.
		_, more := compileCheck(f)
		if problems = dedupe(append(problems, more...)); len(problems) > 0 {
			fmt.Fprintf(env.stderr, "environment %s:\n", name)
			reportProblems(env.stderr, *file, problems)
			broken = true
			continue
		}
		flat[i] = flatten(f.Config)
		shown[i] = map[string]string{}
		for _, fl := range flatten(config.Redacted(f.Config)) {
			shown[i][fl.path] = fl.value
		}
	}
	if broken {
		return errReported
	}
	a, b := toMap(flat[0]), toMap(flat[1])
	var paths []string
	for _, fl := range append(flat[0], flat[1]...) {
		if !slices.Contains(paths, fl.path) {
			paths = append(paths, fl.path)
		}
	}
	var thresholds, others []string
	w := env.stdout
	for _, p := range paths {
		va, inA := a[p]
		vb, inB := b[p]
		if inA && inB && sameValue(p, va, vb) {
			continue
		}
		kind := ""
		if inA && inB && thresholdPath.MatchString(p) {
			thresholds = append(thresholds, p)
			kind = "  (threshold)"
		} else {
			others = append(others, p)
		}
		fmt.Fprintf(w, "%-44s %s: %s  %s: %s%s\n", p, pos[0], show(shown[0], p, inA), pos[1], show(shown[1], p, inB), kind)
	}
	switch {
	case len(others) > 0:
		fmt.Fprintf(w, "\n%s and %s differ in more than thresholds: %s\n", pos[0], pos[1], strings.Join(others, ", "))
		return errReported
	case len(thresholds) == 0:
		fmt.Fprintf(w, "%s and %s are identical\n", pos[0], pos[1])
	default:
		fmt.Fprintf(w, "\n%s and %s differ only in thresholds (%d)\n", pos[0], pos[1], len(thresholds))
	}
	return nil
}

func show(m map[string]string, path string, present bool) string {
	if !present {
		return "(absent)"
	}
	return strconv.Quote(m[path])
}

type field struct{ path, value string }

func toMap(fs []field) map[string]string {
	m := make(map[string]string, len(fs))
	for _, f := range fs {
		m[f.path] = f.value
	}
	return m
}

// flatten lists every leaf of c as a field path and its value, in the
// order of the file format. Items of lists whose elements have a name
// (routes, rules) are addressed by it: rules[rate-limit-ip].limits[0].
func flatten(c config.Config) []field {
	var out []field
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			t := v.Type()
			for i := range t.NumField() {
				name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
				if name == "" || name == "-" {
					continue
				}
				walk(join(path, name), v.Field(i))
			}
		case reflect.Map:
			keys := v.MapKeys()
			slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
			for _, k := range keys {
				walk(join(path, k.String()), v.MapIndex(k))
			}
		case reflect.Slice:
			if unordered.MatchString(path) {
				// A set: one field, its items in one order.
				items := make([]string, v.Len())
				for i := range items {
					items[i] = strings.ToUpper(fmt.Sprint(v.Index(i).Interface()))
				}
				slices.Sort(items)
				out = append(out, field{path, strings.Join(items, ", ")})
				return
			}
			for i := range v.Len() {
				e := v.Index(i)
				idx := strconv.Itoa(i)
				if e.Kind() == reflect.Struct {
					if n := e.FieldByName("Name"); n.IsValid() && n.String() != "" {
						idx = n.String()
					}
				}
				walk(path+"["+idx+"]", e)
			}
		default:
			out = append(out, field{path, fmt.Sprint(v.Interface())})
		}
	}
	walk("", reflect.ValueOf(c))
	return out
}

// unordered are the lists whose order means nothing, compared as sets
// of items in any case: a route's methods.
var unordered = regexp.MustCompile(`^routes\[[^\]]+\]\.methods$`)

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// sameValue reports whether a and b, the values of the field at path in
// the two environments, mean the same: the same text, or the same value
// written another way where the field has a meaning that the loader
// reads past the text (see meanings). serve would run both alike, so the
// parity check does not count them as a difference.
func sameValue(path, a, b string) bool {
	if a == b {
		return true
	}
	for _, m := range meanings {
		if m.path.MatchString(path) {
			ca, errA := m.canon(a)
			cb, errB := m.canon(b)
			return errA == nil && errB == nil && ca == cb
		}
	}
	return false
}

// Field paths as flatten writes them: a rule or route by its name, an
// upstream, plan or route group by its key.
const (
	ruleAt  = `rules\[[^\]]+\]`
	routeAt = `routes\[[^\]]+\]`
	keyAt   = `[^.\[]+`
)

// meanings are the fields whose values are read for what they mean,
// each with what it means, written one way: durations (120s, 2m),
// Retry-After (60, 60s, 1m), limits (100/5m, 100/300s), header names
// and methods in any case, keys and costs naming a header, route group
// prefixes (compared without regard to case, a trailing slash or none),
// origins, and trusted proxies (192.0.2.1, 192.0.2.1/32).
var meanings = []struct {
	path  *regexp.Regexp
	canon func(string) (string, error)
}{
	{regexp.MustCompile(`^(server\.(read_header_timeout|idle_timeout|shutdown_grace|body_read_timeout|write_idle_timeout)|reload\.settle|store\.timeout|sessions\.max_age|sessions\.per_ip\.window|(upstreams\.` + keyAt + `|` + routeAt + `)\.timeouts\.(connect|response_header|total))$`),
		func(s string) (string, error) {
			return durationText(config.ParseDuration(strings.TrimSpace(s), math.MinInt64, math.MaxInt64))
		}},
	{regexp.MustCompile(`^(` + ruleAt + `|` + routeAt + `)\.retry_after$`),
		func(s string) (string, error) { return durationText(config.ParseRetryAfter(s)) }},
	{regexp.MustCompile(`^` + ruleAt + `\.ban$`),
		func(s string) (string, error) { return durationText(config.ParseBan(s)) }},
	{regexp.MustCompile(`^(` + ruleAt + `\.(limits|candidates)|api_clients\.plans\.` + keyAt + `)\[\d+\]$`), limitText},
	{regexp.MustCompile(`^` + ruleAt + `\.key\[\d+\]$`), func(s string) (string, error) {
		k, err := config.ParseKey(s)
		return k.String(), err
	}},
	{regexp.MustCompile(`^` + ruleAt + `\.cost$`), func(s string) (string, error) {
		kind, header, err := config.ParseCost(s)
		return kind + ":" + header, err
	}},
	{regexp.MustCompile(`^(responses\.cors\.expose_headers\[\d+\]|upstreams\.` + keyAt + `\.auth\.header_name|client_ip\.header)$`),
		func(s string) (string, error) { return textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(s)), nil }},
	{regexp.MustCompile(`^route_groups\.` + keyAt + `\.prefix$`), func(s string) (string, error) {
		segs, err := config.ParsePrefix(s)
		return strings.ToLower(strings.Join(segs, "/")), err
	}},
	{regexp.MustCompile(`^responses\.cors\.allow_origin$`),
		func(s string) (string, error) { return strings.ToLower(strings.TrimSuffix(s, "/")), nil }},
	{regexp.MustCompile(`^client_ip\.trusted_proxies\[\d+\]$`), func(s string) (string, error) {
		p, err := config.ParseTrustedProxy(s)
		return p.String(), err
	}},
}

func durationText(d time.Duration, err error) (string, error) { return d.String(), err }

// limitText writes an N/WINDOW limit one way: 100/300s is 100/5m.
func limitText(s string) (string, error) {
	count, window, ok := strings.Cut(s, "/")
	if !ok {
		return "", fmt.Errorf("limit %q is not N/WINDOW", s)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
	if err != nil {
		return "", err
	}
	w, err := ratelimit.ParseWindow(window)
	return strconv.FormatInt(n, 10) + "/" + ratelimit.FormatWindow(w), err
}
