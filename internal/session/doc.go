// Package session provides the signed visitor sessions of the Openverse
// deployment and a bounded count of sessions per client address.
//
// # Sessions
//
// A Manager issues and verifies one cookie, "ovSession" by default. Its value
// is a random 128-bit session id and the instant it was issued, signed with
// HMAC-SHA256 by github.com/gorilla/securecookie under a secret from the
// environment (HMAC_SIGNING_SECRET). The cookie is HttpOnly, Secure,
// SameSite=Lax (Strict would drop the cookie when a visitor arrives from an
// external link, and every such visit would start a new session) and lives
// for Options.MaxAge, one hour by default.
//
// Secrets rotate: Options.Secrets lists them newest first; the first signs,
// every one verifies. To rotate, put the new secret first, keep the old one
// for at least MaxAge, then drop it.
//
// Expiry is decided by the Manager's own clock (Options.Now) against the
// signed issue instant, not by the browser: a cookie replayed after MaxAge is
// invalid whatever its Expires attribute said. A cookie that is present but
// forged, tampered with, signed by an unknown secret, expired, issued in the
// future, malformed or oversized is reported as present and invalid; callers
// treat it exactly as no session.
//
// The Manager owns its cookie on the frontend path too: StripCookie removes
// it (and only it) from the Cookie header sent to the frontend upstream, and
// StripSetCookie removes any Set-Cookie for it coming back, so the frontend's
// own cookies pass both ways and the session cookie never leaves floodgate.
//
// A Manager is immutable after New and safe for concurrent use.
//
// # Sessions per IP
//
// An IPTracker counts the sessions issued per client-address key in fixed
// windows, keeps only a keyed 64-bit hash of each key, holds at most
// MaxKeys entries, reports the distribution of sessions per address for the
// last complete window (how many addresses had 1, 2, 3–4, 5–8 … sessions:
// a school or library shows up as one address with many sessions), and can
// cap the number of new sessions per address per window.
package session
