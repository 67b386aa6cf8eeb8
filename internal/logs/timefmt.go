package logs

// Timestamps are parsed by hand: time.Parse costs more than the rest of a
// common-format line.

var months = [12][3]byte{
	{'J', 'a', 'n'}, {'F', 'e', 'b'}, {'M', 'a', 'r'}, {'A', 'p', 'r'}, {'M', 'a', 'y'}, {'J', 'u', 'n'},
	{'J', 'u', 'l'}, {'A', 'u', 'g'}, {'S', 'e', 'p'}, {'O', 'c', 't'}, {'N', 'o', 'v'}, {'D', 'e', 'c'},
}

// month returns the 1-based month of a three-letter English abbreviation,
// or 0.
func month(b []byte) int {
	if len(b) != 3 {
		return 0
	}
	for i, m := range months {
		if b[0] == m[0] && b[1] == m[1] && b[2] == m[2] {
			return i + 1
		}
	}
	return 0
}

// digits returns the value of the decimal digits b, or -1 if b is empty or
// holds anything else.
func digits(b []byte) int {
	if len(b) == 0 || len(b) > 9 {
		return -1
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// The years a timestamp may have: those whose every instant fits in
// int64 Unix nanoseconds (1677-09-21 to 2262-04-11).
const (
	minYear = 1678
	maxYear = 2261
)

// minUnixNano is the first instant of minYear in Unix nanoseconds.
var minUnixNano = daysFromCivil(minYear, 1, 1) * 86400 * 1e9

// maxUnixMilli is the last millisecond of maxYear, the latest timestamp
// read where a log gives Unix milliseconds.
var maxUnixMilli = daysFromCivil(maxYear+1, 1, 1)*86400*1000 - 1

// unixNanos returns the Unix nanoseconds of a UTC civil time, or false if
// a field is out of range. A leap second (60) counts as the next second.
// Years are limited to minYear–maxYear, the range of int64 nanoseconds.
func unixNanos(y, mo, d, h, mi, s, nanos int) (int64, bool) {
	if y < minYear || y > maxYear || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) ||
		h > 23 || mi > 59 || s > 60 || h < 0 || mi < 0 || s < 0 {
		return 0, false
	}
	secs := daysFromCivil(y, mo, d)*86400 + int64(h*3600+mi*60+s)
	return secs*1e9 + int64(nanos), true
}

// parseCLFTime parses the 26 bytes of a common-log timestamp inside its
// brackets, "10/Oct/2000:13:55:36 -0700", into Unix nanoseconds.
func parseCLFTime(b []byte) (int64, bool) {
	if len(b) != 26 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return 0, false
	}
	d, mo, y := digits(b[0:2]), month(b[3:6]), digits(b[7:11])
	h, mi, s := digits(b[12:14]), digits(b[15:17]), digits(b[18:20])
	if d < 0 || mo == 0 || y < 0 || h < 0 || mi < 0 || s < 0 {
		return 0, false
	}
	t, ok := unixNanos(y, mo, d, h, mi, s, 0)
	if !ok {
		return 0, false
	}
	off, ok := zoneOffset(b[21:26], false)
	if !ok {
		return 0, false
	}
	return t - off*1e9, true
}

// zoneOffset parses "+hhmm" (or "+hh:mm" when colon) into seconds east of
// UTC.
func zoneOffset(b []byte, colon bool) (int64, bool) {
	var hh, mm int
	switch {
	case !colon && len(b) == 5:
		hh, mm = digits(b[1:3]), digits(b[3:5])
	case colon && len(b) == 6 && b[3] == ':':
		hh, mm = digits(b[1:3]), digits(b[4:6])
	default:
		return 0, false
	}
	if hh < 0 || mm < 0 || hh > 23 || mm > 59 {
		return 0, false
	}
	off := int64(hh*3600 + mm*60)
	switch b[0] {
	case '+':
		return off, true
	case '-':
		return -off, true
	}
	return 0, false
}

// parseRFC3339 parses an RFC 3339 timestamp, "2018-07-02T22:23:00.186641Z"
// or "2026-11-30T10:00:00.5+01:00", with up to nine fractional digits,
// into Unix nanoseconds.
func parseRFC3339(b []byte) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	y, mo, d := digits(b[0:4]), digits(b[5:7]), digits(b[8:10])
	h, mi, s := digits(b[11:13]), digits(b[14:16]), digits(b[17:19])
	if y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || s < 0 {
		return 0, false
	}
	rest := b[19:]
	nanos := 0
	if rest[0] == '.' {
		i := 1
		scale := 100000000
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			if scale == 0 {
				return 0, false // more than nine digits
			}
			nanos += int(rest[i]-'0') * scale
			scale /= 10
			i++
		}
		if i == 1 {
			return 0, false
		}
		rest = rest[i:]
	}
	t, ok := unixNanos(y, mo, d, h, mi, s, nanos)
	if !ok {
		return 0, false
	}
	if len(rest) == 1 && (rest[0] == 'Z' || rest[0] == 'z') {
		return t, true
	}
	off, ok := zoneOffset(rest, true)
	if !ok {
		return 0, false
	}
	return t - off*1e9, true
}

// decimalDuration parses a non-negative decimal number of units ("0.412"
// with unit time.Millisecond) into a duration; fractions finer than a
// nanosecond are cut off.
func decimalDuration(b []byte, unit int64) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var whole, frac, scale int64 = 0, 0, 1
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if whole > 1e12 {
			return 0, false
		}
		whole = whole*10 + int64(b[i]-'0')
	}
	if i == 0 {
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if scale < 1e9 {
				frac = frac*10 + int64(b[i]-'0')
				scale *= 10
			}
		}
	}
	if i != len(b) || whole > (1<<62)/unit {
		return 0, false
	}
	return whole*unit + frac*unit/scale, true
}
