// Package uaclass sorts User-Agent strings into three classes of client —
// browsers, scripts and crawlers — so that limits can be sized without
// throttling people in browsers.
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
//     names no automation tool (HeadlessChrome, PhantomJS, Selenium,
//     Puppeteer, Playwright, or a library such as python-requests, curl,
//     wget, Java, Go-http-client, okhttp, axios, node-fetch, Postman,
//     libwww-perl).
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

// A word is a lower-case needle and the class it makes a User-Agent.
type word struct {
	text  []byte
	class Class // Crawler anywhere; Script in a Mozilla-style User-Agent
}

var words = []word{
	// Crawler words: any User-Agent holding one is a crawler.
	{[]byte("bot"), Crawler}, {[]byte("crawl"), Crawler}, {[]byte("spider"), Crawler},
	{[]byte("slurp"), Crawler}, {[]byte("archiver"), Crawler}, {[]byte("fetcher"), Crawler},
	{[]byte("chatgpt-user"), Crawler}, {[]byte("anthropic-ai"), Crawler},
	{[]byte("google-extended"), Crawler}, {[]byte("meta-externalagent"), Crawler},
	{[]byte("scrapy"), Crawler}, {[]byte("facebookexternalhit"), Crawler},
	{[]byte("mediapartners-google"), Crawler}, {[]byte("feedburner"), Crawler},
	// Script words: a Mozilla-style User-Agent holding one is a script.
	{[]byte("headless"), Script}, {[]byte("phantomjs"), Script}, {[]byte("python"), Script},
	{[]byte("curl"), Script}, {[]byte("wget"), Script}, {[]byte("java"), Script},
	{[]byte("go-http-client"), Script}, {[]byte("okhttp"), Script}, {[]byte("axios"), Script},
	{[]byte("node-fetch"), Script}, {[]byte("postman"), Script}, {[]byte("libwww"), Script},
	{[]byte("httpclient"), Script}, {[]byte("selenium"), Script}, {[]byte("puppeteer"), Script},
	{[]byte("playwright"), Script},
}

// byFirst indexes words by their first byte, so one pass over a
// User-Agent finds them all; pairs has a bit set for the first two bytes
// of every word, so most positions are passed over after one test.
var (
	byFirst [256][]word
	pairs   [1 << 16 / 64]uint64
)

func init() {
	for _, w := range words {
		byFirst[w.text[0]] = append(byFirst[w.text[0]], w)
		p := uint16(w.text[0])<<8 | uint16(w.text[1])
		pairs[p/64] |= 1 << (p % 64)
	}
}

var (
	compatible = []byte("mozilla/5.0 (compatible; ")
	// Engines that use the "(compatible; …)" form and are browsers.
	compatibleBrowsers = [][]byte{[]byte("msie"), []byte("konqueror")}
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
	script := false
	for i := 0; i+2 < len(s); i++ {
		if p := uint16(s[i])<<8 | uint16(s[i+1]); pairs[p/64]&(1<<(p%64)) == 0 {
			continue
		}
		for _, w := range byFirst[s[i]] {
			t := w.text
			if s[i+1] != t[1] || len(s)-i < len(t) || !bytes.Equal(s[i+2:i+len(t)], t[2:]) {
				continue
			}
			if w.class == Script {
				script = true
				continue
			}
			// "bot" in "cubot" is a phone maker, not a bot.
			if len(t) == 3 && i >= 2 && s[i-2] == 'c' && s[i-1] == 'u' {
				continue
			}
			return Crawler
		}
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
	if script || !bytes.HasPrefix(s, mozilla) && !bytes.HasPrefix(s, opera) {
		return Script
	}
	return Browser
}
