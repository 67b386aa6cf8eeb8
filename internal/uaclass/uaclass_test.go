package uaclass

import (
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

var classifyCases = []struct {
	name string
	ua   string
	want Class
}{
	// Browsers.
	{"chrome windows", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/94.0.4606.54 Safari/537.36", Browser},
	{"firefox linux", "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:27.0) Gecko/20100101 Firefox/27.0", Browser},
	{"safari mac", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_9_1) AppleWebKit/537.73.11 (KHTML, like Gecko) Version/7.0.1 Safari/537.73.11", Browser},
	{"msie compatible", "Mozilla/5.0 (compatible; MSIE 9.0; Windows NT 6.1; WOW64; Trident/5.0)", Browser},
	{"msie 6", "Mozilla/4.0 (compatible; MSIE 6.0; Windows NT 5.1; SV1)", Browser},
	{"konqueror", "Mozilla/5.0 (compatible; Konqueror/4.5; Linux) KHTML/4.5.4 (like Gecko)", Browser},
	{"old opera", "Opera/9.80 (Windows NT 6.1; U; en) Presto/2.10.289 Version/12.00", Browser},
	{"cubot phone is not a bot", "Mozilla/5.0 (Linux; Android 9; CUBOT P30) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/86.0.4240.99 Mobile Safari/537.36", Browser},
	{"iphone", "Mozilla/5.0 (iPhone; CPU iPhone OS 6_0 like Mac OS X) AppleWebKit/536.26 (KHTML, like Gecko) Version/6.0 Mobile/10A5376e Safari/8536.25", Browser},
	{"upper case prefix", "MOZILLA/5.0 (X11; Linux x86_64) Firefox/120.0", Browser},

	// Crawlers.
	{"googlebot", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", Crawler},
	{"googlebot smartphone", "Mozilla/5.0 (iPhone; CPU iPhone OS 6_0 like Mac OS X) AppleWebKit/536.26 (KHTML, like Gecko) Version/6.0 Mobile/10A5376e Safari/8536.25 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", Crawler},
	{"bingbot", "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", Crawler},
	{"msnbot", "msnbot/2.0b (+http://search.msn.com/msnbot.htm)", Crawler},
	{"baiduspider", "Mozilla/5.0 (compatible; Baiduspider/2.0; +http://www.baidu.com/search/spider.html)", Crawler},
	{"yahoo slurp", "Mozilla/5.0 (compatible; Yahoo! Slurp; http://help.yahoo.com/help/us/ysearch/slurp)", Crawler},
	{"archive.org", "Mozilla/5.0 (compatible; archive.org_bot +http://www.archive.org/details/archive.org_bot)", Crawler},
	{"ia_archiver", "ia_archiver (+http://www.alexa.com/site/help/webmasters; crawler@alexa.com)", Crawler},
	{"compatible unknown engine", "Mozilla/5.0 (compatible; Ezooms/1.0; help@moz.com)", Crawler},
	{"gptbot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)", Crawler},
	{"chatgpt-user", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko); compatible; ChatGPT-User/1.0; +https://openai.com/bot", Crawler},
	{"claudebot", "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; ClaudeBot/1.0; +claudebot@anthropic.com)", Crawler},
	{"anthropic-ai", "anthropic-ai", Crawler},
	{"ccbot", "CCBot/2.0 (https://commoncrawl.org/faq/)", Crawler},
	{"bytespider", "Mozilla/5.0 (Linux; Android 5.0) AppleWebKit/537.36 (KHTML, like Gecko) Mobile Safari/537.36 (compatible; Bytespider; spider-feedback@bytedance.com)", Crawler},
	{"google-extended", "Google-Extended", Crawler},
	{"meta-externalagent", "meta-externalagent/1.1 (+https://developers.facebook.com/docs/sharing/webmasters/crawler)", Crawler},
	{"facebookexternalhit", "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", Crawler},
	{"feedfetcher", "Feedfetcher-Google; (+http://www.google.com/feedfetcher.html; 1 subscribers)", Crawler},
	{"feedburner", "FeedBurner/1.0 (http://www.FeedBurner.com)", Crawler},
	{"scrapy", "Scrapy/2.11.0 (+https://scrapy.org)", Crawler},
	{"bot after cubot", "Mozilla/5.0 (Linux; Android 9; CUBOT P30) SomeBot/1.0", Crawler},

	// Scripts.
	{"empty", "", Script},
	{"curl", "curl/7.46.0", Script},
	{"wget", "Wget/1.13.4 (linux-gnu)", Script},
	{"python-requests", "python-requests/2.31.0", Script},
	{"python-urllib", "Python-urllib/3.11", Script},
	{"go", "Go-http-client/1.1", Script},
	{"java", "Java/1.8.0_151", Script},
	{"R httr", "libcurl/8.4.0 r-curl/5.1.0 httr/1.4.7", Script},
	{"feed reader", "UniversalFeedParser/4.2-pre-314-svn +http://feedparser.org/", Script},
	{"chef", "Chef Client/10.18.2 (ruby-1.9.3-p327; ohai-6.16.0; x86_64-linux; +http://opscode.com)", Script},
	{"headless chrome", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36", Script},
	{"phantomjs", "Mozilla/5.0 (Unknown; Linux x86_64) AppleWebKit/538.1 (KHTML, like Gecko) PhantomJS/2.1.1 Safari/538.1", Script},
	{"mozilla-looking python", "Mozilla/5.0 (compatible; MSIE 9.0) python-requests/2.0", Script},
	{"postman", "PostmanRuntime/7.36.0", Script},
	{"dash", "-", Script},
	{"short mozilla", "Mozilla", Script},
	{"binary junk", "\x00\xff\xfe", Script},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.ua); got != tc.want {
				t.Errorf("Classify(%q) = %v, want %v", tc.ua, got, tc.want)
			}
			if got := ClassifyBytes([]byte(tc.ua)); got != tc.want {
				t.Errorf("ClassifyBytes(%q) = %v, want %v", tc.ua, got, tc.want)
			}
		})
	}
}

func TestLongUserAgentIsJudgedByItsStart(t *testing.T) {
	ua := "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0 " + strings.Repeat("x", MaxLen) + " Googlebot"
	if got := Classify(ua); got != Browser {
		t.Errorf("Classify(long UA with a bot word past MaxLen) = %v, want %v", got, Browser)
	}
	if got := Classify(strings.Repeat("a", 1<<20)); got != Script {
		t.Errorf("Classify(1 MiB of a) = %v, want %v", got, Script)
	}
}

func TestStringAndParse(t *testing.T) {
	for c := Unknown; c < NumClasses; c++ {
		got, ok := Parse(c.String())
		if !ok || got != c {
			t.Errorf("Parse(%q) = %v, %v; want %v, true", c.String(), got, ok, c)
		}
	}
	if _, ok := Parse("robot"); ok {
		t.Errorf("Parse(%q) ok, want not ok", "robot")
	}
	if got := Class(200).String(); got != "unknown" {
		t.Errorf("Class(200).String() = %q, want unknown", got)
	}
}

// TestClassifyDoesNotAllocate holds the budget the gateway's access log
// relies on: classifying costs no allocation.
func TestClassifyDoesNotAllocate(t *testing.T) {
	ua := classifyCases[0].ua
	uab := []byte(classifyCases[10].ua)
	if n := testing.AllocsPerRun(1000, func() { Classify(ua) }); n != 0 {
		t.Errorf("Classify allocs = %v, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { ClassifyBytes(uab) }); n != 0 {
		t.Errorf("ClassifyBytes allocs = %v, want 0", n)
	}
}

func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		f.Add(tc.ua)
	}
	f.Fuzz(func(t *testing.T, ua string) {
		c := Classify(ua)
		if c == Unknown || c >= NumClasses {
			t.Fatalf("Classify(%q) = %d, want a known class", ua, c)
		}
		if b := ClassifyBytes([]byte(ua)); b != c {
			t.Fatalf("ClassifyBytes(%q) = %v, Classify = %v", ua, b, c)
		}
		// Case does not matter (for ASCII letters).
		if utf8.ValidString(ua) {
			if u := Classify(strings.ToUpper(ua)); u != c && len(strings.ToUpper(ua)) == len(ua) {
				t.Fatalf("Classify(upper(%q)) = %v, Classify = %v", ua, u, c)
			}
		}
	})
}

func BenchmarkClassify(b *testing.B) {
	for _, name := range []string{"chrome windows", "googlebot", "python-requests", "headless chrome"} {
		var ua string
		for _, tc := range classifyCases {
			if tc.name == name {
				ua = tc.ua
			}
		}
		b.Run(strings.ReplaceAll(name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(ua)
			}
		})
	}
}

// TestImports keeps the package on the standard library: the gateway's
// request path imports it.
func TestImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/floodgate/floodgate/internal/uaclass" {
		t.Errorf("non-standard dependencies: %v, want only the package itself", got)
	}
}
