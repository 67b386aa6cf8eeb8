package gateway

import "testing"

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		path, outer string
		want        bool
	}{
		{"rules[0].name", "rules[0]", true},
		{"rules[0]", "rules[0]", true},
		{"rules[0].limits[1]", "rules[0].limits", true},
		{"rules[10]", "rules[1]", false},
		{"rules[1]", "rules[10]", false},
		{"sessions.secret", "sessions", true},
		{"sessions_x", "sessions", false},
		{`upstreams["a.b"].auth`, `upstreams["a.b"]`, true},
		{"upstreams.ab.auth", "upstreams.a", false},
		{"client_ip", "client_ip.trusted_proxies[0]", false},
	} {
		if got := within(tc.path, tc.outer); got != tc.want {
			t.Errorf("within(%q, %q) = %t, want %t", tc.path, tc.outer, got, tc.want)
		}
	}
}
