// Command loggen writes a large common-format access log for
// bench/logs.sh, from a sample combined or common log: the sample's lines,
// cut to the common format, repeated with perturbed clients and days.
//
// Copy k (from 0) adds k to the first octet of each IPv4 client (modulo
// 223, plus one) and k days to every timestamp, so the result has many
// distinct clients, spans many windows, and is in time order copy after
// copy. Lines of the sample that are not in the common format are left
// out.
//
//	go run ./bench/loggen -lines 1500000 SAMPLE >big.log
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	lines := flag.Int("lines", 1500000, "lines to write")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: loggen [-lines N] SAMPLE")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *lines); err != nil {
		fmt.Fprintln(os.Stderr, "loggen:", err)
		os.Exit(1)
	}
}

type sample struct {
	octets [4]int // -1 in octets[0]: the client is not an IPv4 address
	client []byte
	mid    []byte // " - - " up to "["
	at     time.Time
	rest   []byte // after the timestamp's "]", up to the response size
}

func run(name string, want int) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	var samples []sample
	for line := range bytes.Lines(data) {
		if s, ok := parse(bytes.TrimRight(line, "\r\n")); ok {
			samples = append(samples, s)
		}
	}
	if len(samples) == 0 {
		return fmt.Errorf("%s: no line in the common format", name)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	var buf []byte
	for k, n := 0, 0; n < want; k++ {
		for _, s := range samples {
			if n == want {
				break
			}
			buf = buf[:0]
			if s.octets[0] >= 0 {
				buf = strconv.AppendInt(buf, int64((s.octets[0]+k)%223+1), 10)
				for _, o := range s.octets[1:] {
					buf = append(buf, '.')
					buf = strconv.AppendInt(buf, int64(o), 10)
				}
			} else {
				buf = append(buf, s.client...)
			}
			buf = append(buf, s.mid...)
			buf = append(buf, '[')
			buf = s.at.AddDate(0, 0, k).AppendFormat(buf, "02/Jan/2006:15:04:05 -0700")
			buf = append(buf, s.rest...)
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
			n++
		}
	}
	return w.Flush()
}

// parse splits a common or combined line into the parts loggen perturbs.
func parse(line []byte) (sample, bool) {
	var s sample
	sp := bytes.IndexByte(line, ' ')
	lb := bytes.IndexByte(line, '[')
	if sp <= 0 || lb < sp {
		return s, false
	}
	rb := bytes.IndexByte(line[lb:], ']')
	if rb < 0 {
		return s, false
	}
	at, err := time.Parse("02/Jan/2006:15:04:05 -0700", string(line[lb+1:lb+rb]))
	if err != nil {
		return s, false
	}
	// The request, status and size: up to the second space after the
	// request's closing quote.
	rest := line[lb+rb:]
	q1 := bytes.IndexByte(rest, '"')
	if q1 < 0 {
		return s, false
	}
	q2 := bytes.IndexByte(rest[q1+1:], '"')
	if q2 < 0 {
		return s, false
	}
	end := q1 + 1 + q2 + 1
	fields := bytes.Fields(rest[end:])
	if len(fields) < 2 {
		return s, false
	}
	end = bytes.Index(rest[end:], fields[1]) + end + len(fields[1])
	s.client, s.mid, s.at, s.rest = line[:sp], line[sp:lb], at, rest[:end]
	s.octets[0] = -1
	if parts := bytes.Split(s.client, []byte(".")); len(parts) == 4 {
		ok := true
		for i, p := range parts {
			v, err := strconv.Atoi(string(p))
			if err != nil || v < 0 || v > 255 {
				ok = false
				break
			}
			s.octets[i] = v
		}
		if !ok {
			s.octets[0] = -1
		}
	}
	return s, true
}
