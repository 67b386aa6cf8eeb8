package config_test

import (
	"strings"
	"testing"

	"github.com/floodgate/floodgate/internal/config"
	"github.com/floodgate/floodgate/ratelimit/redisstore"
)

// storeURLShown is what Redacted shows of a store URL.
func storeURLShown(u string) string {
	return config.Redacted(config.Config{Store: config.Store{URL: u}}).Store.URL
}

// TestRedactedStoreURLs: every password the Redis store accepts is masked,
// including those net/url refuses to parse (before, such a URL was shown
// whole: by validate, /admin/config and serve's log).
func TestRedactedStoreURLs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"redis://:pw^{secret}@127.0.0.1:1/0", "redis://:xxxxx@127.0.0.1:1/0"},
		{"redis://:p w|\"<>\\@10.0.0.1:6379", "redis://:xxxxx@10.0.0.1:6379"},
		{"redis://:pw@[::1]:6379,[::2]:6379", "redis://:xxxxx@[::1]:6379,[::2]:6379"},
		{"rediss://app:s3cr@t@cache.internal:6380/2?timeout=50ms", "rediss://app:xxxxx@cache.internal:6380/2?timeout=50ms"},
		{"valkey://default:hunter2@h1:6379,h2:6379", "valkey://default:xxxxx@h1:6379,h2:6379"},
		{"redis://user@host:6379", "redis://user@host:6379"}, // no password: nothing to mask
		{"redis://host:6379/0?timeout=1s", "redis://host:6379/0?timeout=1s"},
		{"memory", "memory"},
		{" redis://:hunter2@h:1", " redis://:xxxxx@h:1"}, // the store trims blanks
	} {
		if got := storeURLShown(tc.in); got != tc.want {
			t.Errorf("Redacted(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Not URLs with credentials, shown as they are.
	for _, s := range []string{"http://api:8080/@scope/pkg", "request.path == \"a://b:c@d\"", "://x:y@z"} {
		r := config.Redacted(config.Config{Rules: []config.Rule{{Name: "r", When: s}}})
		if got := r.Rules[0].When; got != s {
			t.Errorf("Redacted changed %q to %q", s, got)
		}
	}
}

// FuzzRedactedStoreURL: whatever URL the Redis store accepts with a
// password, the shown URL does not carry that password's text.
func FuzzRedactedStoreURL(f *testing.F) {
	for _, s := range []string{"redis://:pw^{secret}@127.0.0.1:1/0", "redis://u:p@h:1,h2:2/3?timeout=5ms", "rediss://:a%40b@[::1]:6379", "redis://:x@y@z:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := redisstore.ParseURL(s)
		if err != nil || len(o.Password) < 4 {
			return // short passwords occur elsewhere in the URL by chance
		}
		shown := storeURLShown(s)
		// The password as written (escaped) in s, and decoded.
		_, rest, _ := strings.Cut(strings.TrimSpace(s), "://")
		if i := strings.IndexAny(rest, "/?"); i >= 0 {
			rest = rest[:i]
		}
		userinfo := rest[:strings.LastIndexByte(rest, '@')]
		_, written, _ := strings.Cut(userinfo, ":")
		for _, p := range []string{written, o.Password} {
			if len(p) >= 4 && strings.Contains(shown, p) && !strings.Contains(stripUserinfo(shown), p) {
				t.Fatalf("Redacted(%q) = %q: shows the password %q", s, shown, p)
			}
		}
	})
}

// stripUserinfo drops what precedes the authority's last "@", to tell the
// password apart from the same text in the host or path.
func stripUserinfo(u string) string {
	scheme, rest, _ := strings.Cut(u, "://")
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:]
	}
	return scheme + "://" + rest
}

func TestMaskURLCredentials(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`token URL "https://ovclient:TOKENURLPASS-42@auth.example/token" is not an http(s) URL without user info`,
			`token URL "https://ovclient:xxxxx@auth.example/token" is not an http(s) URL without user info`},
		{`"http://u:s3cret PW@h/" is not a URL`, `"http://u:xxxxx@h/" is not a URL`},
		{`"http://u:UP/STREAMPASS-3@127.0.0.1:23081" is not a URL`, `"http://u:xxxxx@127.0.0.1:23081" is not a URL`},
		{`store redis://:REDISPASS/q1w2e3+Zz@127.0.0.1:23379 down`, `store redis://:xxxxx@127.0.0.1:23379 down`},
		{`"http://u:pa\"ss@h" bad`, `"http://u:xxxxx@h" bad`},
		{`'redis://:p w@h:1'`, `'redis://:xxxxx@h:1'`},
		{`two: "a://x:1@h" and b://y:2@k.`, `two: "a://x:xxxxx@h" and b://y:xxxxx@k.`},
		{`no password: http://user@h/ and http://h/p`, `no password: http://user@h/ and http://h/p`},
		{`nothing here`, `nothing here`},
		{`cut "redis://:hunter2`, `cut "redis://:hunter2`}, // no "@": no user information
		{`"redis://:a://b@h"`, `"redis://:xxxxx@h"`},
	} {
		if got := config.MaskURLCredentials(tc.in); got != tc.want {
			t.Errorf("MaskURLCredentials(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// FuzzMaskURLCredentials: a password between "://USER:" and "@" in a
// quoted URL never survives.
func FuzzMaskURLCredentials(f *testing.F) {
	f.Add("u", "pw", "h/x")
	f.Add("", "a/b c?d", "127.0.0.1:1")
	f.Fuzz(func(t *testing.T, user, pass, rest string) {
		if len(pass) < 4 || strings.ContainsAny(user, ":@\"\\\n") || strings.ContainsAny(pass, "@\"\\\n") ||
			strings.ContainsAny(rest, "@\"\\\n") || strings.Contains(rest, pass) || strings.Contains(user, pass) {
			return
		}
		in := `url "redis://` + user + ":" + pass + "@" + rest + `" is bad`
		prefix := `url "redis://` + user
		if out := config.MaskURLCredentials(in); !strings.HasPrefix(out, prefix) || strings.Contains(out[len(prefix):], pass) {
			t.Fatalf("MaskURLCredentials(%q) = %q keeps the password", in, out)
		}
	})
}
