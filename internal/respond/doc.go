// Package respond decides and writes every answer floodgate gives itself
// rather than forwarding: refusals by a rule (429, 403), lack of
// capacity (503), upstream failures (502, 504), invalid requests (400) and
// unknown routes (404), and its own failures (500). Status, headers and
// body are all chosen here.
//
// # Use
//
// At config load, build one Writer from Options (NewWriter), compile each
// rule's message (CompileMessage, which config validation also calls to
// report bad placeholders) and each rule's static answer parts (NewRule:
// name, limit, fixed Retry-After, message, RateLimit-Policy). On the
// request path, build an Answer and call Writer.Write:
//
//	w.Write(rw, r, respond.Answer{
//		Kind:       respond.RateLimited,
//		Rule:       rule.Respond, // the *respond.Rule compiled at load
//		RetryAfter: d.RetryAfter, // from ratelimit.Decision
//		Limit:      d.Limit,
//	})
//
// Writer, Rule and Message are immutable after construction and safe for
// concurrent use. Write allocates two small objects per answer (the
// per-answer header values) besides what the ResponseWriter does.
//
// # Problem details
//
// Every answer is an RFC 9457 problem. Its type URI is:
//
//   - RateLimited (429): https://iana.org/assignments/http-problem-types#quota-exceeded
//   - Unavailable (503): https://iana.org/assignments/http-problem-types#temporary-reduced-capacity
//   - every other kind: about:blank, whose title is the status phrase.
//
// The first two are the problem types of draft-ietf-httpapi-ratelimit-headers-10
// §7, registered in IANA's HTTP Problem Types registry when the draft
// is published. Besides type, title, status and detail, the JSON body has
// these members when they apply: "rule" (the rule's name),
// "violated-policies" (429 and 503: an array naming the refusing policy,
// as the draft defines it), "limit" (the rule's limit that refused, such as "100/5m")
// and "retry_after" (the Retry-After seconds). Titles and details come
// from the catalog in the negotiated language; a rule's message replaces
// the detail.
//
// # Headers
//
// Every answer has Content-Type with charset=utf-8 (also on
// application/problem+json, where it has no effect on conforming
// recipients), Content-Length, Content-Language, Cache-Control: no-store,
// X-Content-Type-Options: nosniff and Vary: Accept, Accept-Language (and
// Origin when CORS lists origins). HTML answers add a
// Content-Security-Policy that allows only their inline style.
//
// Retry-After is in whole seconds, rounded up from the limiter's duration
// and at least 1 on 429 and 503; a rule's fixed value (MaveDB's 300)
// replaces it. Other kinds carry it only when the Answer gives one.
//
// RateLimit-Policy carries the rule's policies (FormatPolicy), and on 429
// and 503 RateLimit names the refusing policy with r (remaining) and t
// equal to Retry-After, as draft-ietf-httpapi-ratelimit-headers-10 asks.
// Both are RFC 9651 Lists of Strings with Integer parameters.
//
// With CORS configured, answers carry Access-Control-Allow-Origin ("*",
// or the request's Origin when it is exactly one of the listed origins)
// and Access-Control-Expose-Headers (default Retry-After, RateLimit,
// RateLimit-Policy), so a browser script can read a 429.
//
// # Body format
//
// The body is application/problem+json, text/html or text/plain, chosen
// from Accept (RFC 9110 §12.5.1):
//
//   - Each format takes the q-value of the most specific media range
//     that matches it: application/problem+json, then application/json,
//     then application/*, then */* for JSON; text/html or text/plain, then
//     text/*, then */* for the others. Media-range parameters other than q
//     are ignored.
//   - The format with the highest q wins; on a tie, the one matched by
//     the more specific range (application/json counting as exact), then
//     JSON, then plain text, then HTML.
//   - No Accept field, "*/*" (curl, Python requests, fetch()), a field
//     naming none of the three, or one refusing all of them (q=0) gives
//     problem+json: an error is never turned into a 406. Browsers
//     navigating to a page send text/html and get HTML; "text/*" gets plain text.
//   - Elements that are malformed — bad q-values such as q=2, q=NaN or
//     q=0.0001, or media ranges that are not type/subtype tokens — are
//     ignored, as are elements beyond the first 4096 bytes of the field.
//
// The JSON body is the problem. The HTML page is self-contained and
// accessible: lang attribute, viewport, a title, a <main> with an <h1>
// and the detail in a <p role="alert">, the retry time in words, no
// script, one small inline style with a contrast of at least 7:1 in light
// and dark schemes, and http(s) URLs in a rule's message as links. The
// plain text is the status and title, then the detail.
//
// # Language
//
// floodgate's own words (titles, details, the retry sentence, the page's
// small print) come from the catalog, in English ("en") and Spanish
// ("es"); a rule's message may be written in any BCP 47 language. Both
// are chosen from Accept-Language (RFC 4647 ranges, matched by prefix).
//
// Without a message, among the catalog's languages:
//
//   - A range selects a language when it is that language ("es") or
//     begins with it ("es-MX"); "*" selects all. Each language takes the
//     q-value of its most specific range.
//   - The highest q wins; on a tie, a language named outright beats one
//     matched only by "*", then the one listed first, then the default.
//   - Nothing acceptable, no field, or a malformed field gives the
//     default language (Options.DefaultLanguage, default "en").
//
// With a message, its text first, among the languages it is written in
// (the untagged text being the default language's, unless a text is
// tagged with it):
//
//   - A range selects a text when it is the text's tag ("pt-BR"), begins
//     with it ("en-US" for "en") or is the beginning of it ("pt" for
//     "pt-BR"), case aside, in that order of specificity; "*" selects
//     all. Each text takes the q-value of its most specific range.
//   - The highest q wins; on a tie, a text named outright beats one
//     matched only by "*", then the range listed first, then the more
//     specific match, then the default language's text, then the first
//     by tag.
//   - Nothing acceptable: the text the default language selects as a
//     range, else the untagged text, else the first by tag.
//
// The catalog's words are then in the catalog language of the text's
// language ("en" for "en-GB"), or, for one the catalog lacks ("pt-BR"),
// in the catalog language chosen as without a message.
//
// Content-Language names the detail's language, then the catalog
// language when it is another ("pt-BR, en"); the HTML lang attribute
// names the catalog language and the alert paragraph the detail's.
// {retry_after_human} is written in the catalog language ("5 minutes",
// "5 minutos"), so only a text in one of its languages may use it.
//
// # Messages
//
// A rule's message is a text per language, at most 32, with placeholders {rule},
// {limit}, {retry_after} (seconds) and {retry_after_human}; "{{" and "}}"
// are literal braces. Unknown placeholders are an error at load time.
// Substituted values and the message itself are escaped for each format:
// JSON-escaped in problem+json, HTML-escaped in HTML. When the message
// does not say when to retry, the HTML and text bodies add the catalog's
// "Please try again in …" sentence.
package respond
