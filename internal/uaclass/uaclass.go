// Package uaclass sorts User-Agent strings into three classes of client —
// browsers, scripts and crawlers — so that limits can be sized without
// throttling people in browsers (SPEC T2, M9).
//
// The classes, checked in this order:
//
//   - Crawler: an agent that declares itself as automated indexing or
//     fetching: "bot", "crawl", "spider", "slurp", "archiver", "fetcher"
//     anywhere in it (but not the phone maker "Cubot"); declared AI agents
//     that lack those words (ChatGPT-User, anthropic-ai, Google-Extended,
//     meta-externalagent, Scrapy, facebookexternalhit,
//     Mediapartners-Google, FeedBurner); and the "Mozilla/5.0 (compatible;
//     NAME…)" form when NAME is not a browser engine (MSIE, Konqueror).
//   - Browser: what is left that starts with "Mozilla/" or "Opera/" and
//     names no automation tool (HeadlessChrome, PhantomJS, Electron is a
//     browser; python, curl, wget, Java, Go-http-client, okhttp, axios,
//     node-fetch, Postman, libwww-perl and similar are not).
//   - Script: everything else, including an empty User-Agent: every
//     browser sends one.
//
// Matching ignores ASCII case and looks at the first MaxLen bytes only.
// Classify does not allocate; it takes about as long as a few substring
// searches over the User-Agent. Unknown, the zero Class, is never returned
// by Classify: it stands for "no User-Agent recorded" (a log format
// without one).
package uaclass

import "bytes"

// Class is the kind of client a User-Agent belongs to. The zero value is
// Unknown.
type Class uint8

// Classes.
const (
	Unknown Class = iota // no User-Agent recorded
	Browser              // a person in a web browser
	Script               // a library, tool or program; also no User-Agent at all
	Crawler              // a declared crawler, bot or fetcher
)

// NumClasses is the number of classes, Unknown included: a [NumClasses]T
// indexed by Class holds one T per class.
const NumClasses = 4

var names = [NumClasses]string{Unknown: "unknown", Browser: "browser", Script: "script", Crawler: "crawler"}

// String returns the class's name: "unknown", "browser", "script" or
// "crawler".
func (c Class) String() string {
	if int(c) < len(names) {
		return names[c]
	}
	return "unknown"
}

// Parse returns the Class named s (as String writes it), and whether s
// names one.
func Parse(s string) (Class, bool) {
	for i, n := range names {
		if s == n {
			return Class(i), true
		}
	}
	return Unknown, false
}

// MaxLen is how many leading bytes of a User-Agent Classify examines.
// Real User-Agents are shorter; a longer one is judged by its start.
const MaxLen = 512

var (
	// Words that make any User-Agent a crawler.
	crawlerWords = [][]byte{
		[]byte("bot"), []byte("crawl"), []byte("spider"), []byte("slurp"),
		[]byte("archiver"), []byte("fetcher"), []byte("chatgpt-user"),
		[]byte("anthropic-ai"), []byte("google-extended"), []byte("meta-externalagent"),
		[]byte("scrapy"), []byte("facebookexternalhit"), []byte("mediapartners-google"),
		[]byte("feedburner"),
	}
	// Words that make a Mozilla-style User-Agent a script.
	scriptWords = [][]byte{
		[]byte("headless"), []byte("phantomjs"), []byte("python"), []byte("curl"),
		[]byte("wget"), []byte("java"), []byte("go-http-client"), []byte("okhttp"),
		[]byte("axios"), []byte("node-fetch"), []byte("postman"), []byte("libwww"),
		[]byte("httpclient"), []byte("selenium"), []byte("puppeteer"), []byte("playwright"),
	}
	compatible = []byte("mozilla/5.0 (compatible; ")
	// Engines that use the "(compatible; …)" form and are browsers.
	compatibleBrowsers = [][]byte{[]byte("msie"), []byte("konqueror")}
	cubot              = []byte("cubot")
	mozilla            = []byte("mozilla/")
	opera              = []byte("opera/")
)

// Classify returns the class of User-Agent ua. It never returns Unknown.
func Classify(ua string) Class { return classify(ua) }

// ClassifyBytes is Classify for a User-Agent held in a byte slice, such as
// a line of a log being read. It does not retain ua.
func ClassifyBytes(ua []byte) Class { return classify(ua) }

func classify[T string | []byte](ua T) Class {
	var buf [MaxLen]byte
	n := min(len(ua), MaxLen)
	for i := 0; i < n; i++ {
		c := ua[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	s := buf[:n]
	if hasCrawlerWord(s) {
		return Crawler
	}
	if rest, ok := bytes.CutPrefix(s, compatible); ok {
		browser := false
		for _, w := range compatibleBrowsers {
			if bytes.HasPrefix(rest, w) {
				browser = true
				break
			}
		}
		if !browser {
			return Crawler
		}
	}
	if !bytes.HasPrefix(s, mozilla) && !bytes.HasPrefix(s, opera) {
		return Script
	}
	for _, w := range scriptWords {
		if bytes.Contains(s, w) {
			return Script
		}
	}
	return Browser
}

// hasCrawlerWord reports whether the lower-cased s holds a crawler word;
// "bot" does not count as part of "cubot" (a phone maker, in browser
// User-Agents on its phones).
func hasCrawlerWord(s []byte) bool {
	for _, w := range crawlerWords[1:] {
		if bytes.Contains(s, w) {
			return true
		}
	}
	bot := crawlerWords[0]
	for off := 0; ; {
		i := bytes.Index(s[off:], bot)
		if i < 0 {
			return false
		}
		i += off
		if i < 2 || !bytes.Equal(s[i-2:i+3], cubot) {
			return true
		}
		off = i + len(bot)
	}
}
