package logs

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Format is a log format. The zero value, Auto, asks the Reader to detect
// it.
type Format uint8

// Formats.
const (
	Auto          Format = iota // detect from the first lines
	Common                      // nginx/Apache common log format
	Combined                    // nginx/Apache combined: common plus referer and User-Agent
	VhostCombined               // Apache vhost_combined: the virtual host and port, then combined
	ALB                         // AWS Application Load Balancer access log
	WAF                         // AWS WAF JSON log
	Floodgate                   // floodgate's JSON access and decision logs
)

var formatNames = [...]string{Auto: "auto", Common: "common", Combined: "combined", VhostCombined: "vhost_combined",
	ALB: "alb", WAF: "waf", Floodgate: "floodgate"}

// String returns the format's name, as ParseFormat reads it.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return "unknown"
}

// FormatNames lists the names ParseFormat accepts.
func FormatNames() []string { return append([]string(nil), formatNames[:]...) }

// ParseFormat returns the Format named s ("auto", "common", "combined",
// "vhost_combined", "alb", "waf", "floodgate"); "" is Auto.
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return Auto, nil
	}
	for i, n := range formatNames {
		if s == n {
			return Format(i), nil
		}
	}
	return Auto, fmt.Errorf("unknown log format %q (allowed: %s)", s, strings.Join(formatNames[:], ", "))
}

var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// Sizes of the Reader's buffer and of the sample used for detection.
const (
	// MaxLineLength is the longest line a Reader parses, in bytes, its
	// line end (LF or CR LF) not included; longer lines are counted as
	// unparsed and skipped.
	MaxLineLength = 1 << 20
	// bufferSize holds a line of MaxLineLength and its CR LF.
	bufferSize  = MaxLineLength + 2
	detectLines = 64
)

// Counts are a Reader's line counts. Lines are the lines that are not
// blank (empty or only spaces and tabs): blank lines hold no record and
// are neither parsed nor unparsed, so that every line counted is either
// Parsed or Unparsed.
type Counts struct {
	Lines    int64 `json:"lines"`    // non-blank lines read
	Parsed   int64 `json:"parsed"`   // lines that gave a record
	Unparsed int64 `json:"unparsed"` // lines counted and skipped
}

// Add adds c2 to c.
func (c *Counts) Add(c2 Counts) {
	c.Lines += c2.Lines
	c.Parsed += c2.Parsed
	c.Unparsed += c2.Unparsed
}

// A Reader reads the records of one log. It is not safe for concurrent
// use. Make one with NewReader.
type Reader struct {
	br     *bufio.Reader
	gz     *gzip.Reader
	format Format
	rec    Record
	s      scratch
	tc     timeCache
	counts Counts
	err    error
	// line is the number of the last line read, blank ones included.
	line int64
	// The first line that did not parse (at most 200 bytes of it) and
	// its number, for messages.
	firstUnparsed []byte
	unparsedLine  int64
}

// NewReader returns a Reader of the log in r: gzip-compressed or not
// (detected by the gzip magic bytes), in format f, or, when f is Auto, in
// the format that parses most of its first lines (see Format). A UTF-8
// byte order mark at the start of the log (after decompression) is
// skipped. The error is about reading r; a log whose format cannot be
// detected is read with every line counted as unparsed, and Format
// returns Auto. Detecting, NewReader reads past lines longer than
// MaxLineLength at the start of the log and counts them as unparsed, as
// Next would.
func NewReader(r io.Reader, f Format) (*Reader, error) {
	rd := &Reader{format: f}
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	var src io.Reader = br
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		rd.gz = gz
		src = gz
	}
	rd.br = bufio.NewReaderSize(src, bufferSize)
	rd.rec.Bytes = -1
	// A UTF-8 byte order mark, written by Windows tools and some editors
	// at the start of a text file, would otherwise become part of the
	// first line: of its client's name, or a JSON line that no longer
	// parses.
	bom, err := rd.br.Peek(len(utf8BOM))
	if err != nil && err != io.EOF {
		return nil, err
	}
	if bytes.Equal(bom, utf8BOM) {
		_, _ = rd.br.Discard(len(utf8BOM))
	}
	if f == Auto {
		sample, err := rd.sample()
		if err != nil {
			return nil, err
		}
		rd.format = Detect(sample)
	}
	return rd, nil
}

// sample returns the start of the log for Detect: as much as the buffer
// holds, so that lines up to MaxLineLength long at the start, which Next
// parses, still leave whole lines to detect from. Lines longer than that
// leave no room for another line within the buffer: sample reads past
// them, counting them as unparsed, since nothing after them could be seen
// otherwise.
func (r *Reader) sample() ([]byte, error) {
	for {
		b, err := r.br.Peek(bufferSize)
		if err != nil && err != io.EOF {
			return nil, err
		}
		nl := bytes.IndexByte(b, '\n')
		if len(b) < bufferSize || nl >= 0 && len(trimEOL(b[:nl+1])) <= MaxLineLength {
			return b, nil
		}
		if nl >= 0 {
			// A line one byte over the limit still fits the buffer with
			// its line end.
			line, _ := r.br.ReadSlice('\n')
			r.line++
			r.counts.Lines++
			r.unparsed(line)
			continue
		}
		start, _ := r.br.ReadSlice('\n') // bufio.ErrBufferFull
		switch err := r.skipLong(start); err {
		case nil:
		case io.EOF:
			return nil, nil
		default:
			return nil, err
		}
	}
}

// Format returns the format the Reader parses: the one given to NewReader
// or the one detected; Auto if none was.
func (r *Reader) Format() Format { return r.format }

// Counts returns the lines read so far.
func (r *Reader) Counts() Counts { return r.counts }

// FirstUnparsed returns the number and the first 200 bytes of the first
// line that did not parse; 0 and nil if every line did. The number is the
// line's in the log (1-based, blank lines included), so that an editor or
// `sed -n Np` finds it.
func (r *Reader) FirstUnparsed() (int64, []byte) { return r.unparsedLine, r.firstUnparsed }

// Err returns the first error reading the log (not a parse error: those
// are counted), after Next has returned false.
func (r *Reader) Err() error { return r.err }

// Record returns the current record; see Record for how long it is valid.
func (r *Reader) Record() *Record { return &r.rec }

// Next advances to the next record that parses, counting and skipping the
// lines that do not. It returns false at the end of the log or on a read
// error (see Err).
func (r *Reader) Next() bool {
	for {
		line, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if err := r.skipLong(line); err != nil {
				return r.fail(err)
			}
			continue
		}
		if err != nil && (err != io.EOF || len(line) == 0) {
			return r.fail(err)
		}
		r.line++
		line = trimEOL(line)
		if len(line) == 0 || allSpace(line) {
			if err != nil {
				return r.fail(err)
			}
			continue
		}
		r.counts.Lines++
		if len(line) <= MaxLineLength && parse(r.format, &r.rec, line, &r.s, &r.tc) {
			r.counts.Parsed++
			return true
		}
		r.unparsed(line)
		if err != nil {
			return r.fail(err)
		}
	}
}

// skipLong counts a line longer than the buffer, of which start is the
// beginning, as unparsed and reads past its end. The error is the one
// that ended the line, if any: io.EOF when it was the last.
func (r *Reader) skipLong(start []byte) error {
	r.line++
	r.counts.Lines++
	r.unparsed(start)
	err := bufio.ErrBufferFull
	for errors.Is(err, bufio.ErrBufferFull) {
		_, err = r.br.ReadSlice('\n')
	}
	return err
}

// unparsed counts line, already counted in Lines, as unparsed.
func (r *Reader) unparsed(line []byte) {
	r.counts.Unparsed++
	if r.firstUnparsed == nil {
		r.unparsedLine = r.line
		r.firstUnparsed = append([]byte(nil), line[:min(len(line), 200)]...)
	}
}

func (r *Reader) fail(err error) bool {
	if err != io.EOF && r.err == nil {
		r.err = err
	}
	if r.gz != nil {
		_ = r.gz.Close()
	}
	return false
}

// parse parses line in format f into rec; it resets rec and sc first.
func parse(f Format, rec *Record, line []byte, sc *scratch, tc *timeCache) bool {
	rec.reset()
	sc.buf = sc.buf[:0]
	switch f {
	case Common:
		return parseCLF(rec, line, false, tc)
	case Combined:
		return parseCLF(rec, line, true, tc)
	case VhostCombined:
		return parseVhostCombined(rec, line, tc)
	case ALB:
		return parseALB(rec, line, tc)
	case WAF:
		return parseWAF(rec, line, sc)
	case Floodgate:
		return parseFloodgate(rec, line, sc)
	}
	return false
}

// detectOrder is the order in which Detect prefers formats that parse
// the same number of sample lines: the more specific first. A
// vhost_combined line whose client is a host name also reads as a
// combined one, with the virtual host as its client.
var detectOrder = []Format{Floodgate, WAF, ALB, VhostCombined, Combined, Common}

// Detect returns the format that parses most of the non-empty lines in
// sample (the start of a log; at most 64 lines are tried, and a last line
// without its newline is left out unless it is the only one), preferring
// the more specific format on a tie, or Auto if none parses any line.
// Combined is preferred to common when it parses at least half as many
// lines: combined lines also read as common ones.
func Detect(sample []byte) Format {
	var lines [][]byte
	rest := sample
	for len(lines) < detectLines && len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			if len(lines) == 0 && len(rest) <= MaxLineLength {
				lines = append(lines, rest)
			}
			break
		}
		if l := trimEOL(rest[:nl+1]); len(l) > 0 && len(l) <= MaxLineLength && !allSpace(l) {
			lines = append(lines, l)
		}
		rest = rest[nl+1:]
	}
	var rec Record
	var sc scratch
	var tc timeCache
	best, bestN := Auto, 0
	parsed := map[Format]int{}
	for _, f := range detectOrder {
		n := 0
		for _, l := range lines {
			if parse(f, &rec, l, &sc, &tc) {
				n++
			}
		}
		parsed[f] = n
		if n > bestN {
			best, bestN = f, n
		}
	}
	// Every combined line also reads as common: a combined log with a few
	// broken lines (a truncated User-Agent) is still combined.
	if best == Common && 2*parsed[Combined] >= parsed[Common] {
		best = Combined
	}
	return best
}

func trimEOL(line []byte) []byte {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n]
}

func allSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
