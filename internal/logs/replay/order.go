package replay

import (
	"math"
	"os"
	"slices"
	"time"

	"github.com/floodgate/floodgate/internal/logs"
)

// Bounds of ReadOrdered. Memory is bounded by the files open at once
// (each: its Reader's buffers, about 1.1 MiB, and reorderBytes of records
// waiting for their turn) and ExtraBytes, not by the size of the input.
const (
	// ReorderSpan is how far back in time a record may come in its file
	// and still reach the replay in time order: a file's records are held
	// until it has been read ReorderSpan past them (its latest time), so
	// a request that took up to ReorderSpan, logged when it ended and
	// stamped with its start (an ALB's request_creation_time, floodgate's
	// access log), is replayed in order however busy the log, within
	// ExtraBytes.
	ReorderSpan = 5 * time.Minute
	// reorderBytes is how much of each file is held at least, whatever
	// the time its records span, so a quiet log's records are put back in
	// order over more than ReorderSpan: about 8,000 lines of an access
	// log.
	reorderBytes = 4 << 20
	// ExtraBytes is how much the files open at once may hold together,
	// past reorderBytes each, to cover ReorderSpan: over 100,000 records
	// of an access log, five minutes of some 400 requests a second. A
	// busier log, or one whose times never move on, is held to it, and
	// its records that come back further are late.
	ExtraBytes = 64 << 20
	// MaxOpen is how many files are read at once. Files whose times
	// overlap (one per load balancer node, or per replica, over the same
	// minutes) are read together and merged; past MaxOpen, a file waits
	// for another to end, and those of its records that are then older
	// than the replay's clock are counted late.
	MaxOpen = 32
	// FarAhead is how much later than the records around it a record must
	// be to be left out: one dated more than FarAhead after every record
	// read before it in its file, and followed in the file by a record
	// dated more than FarAhead before it, has a wrong time (a clock set
	// wrong, a corrupt line). No request takes a day, so a record that
	// comes back that far cannot be a slow request logged late.
	FarAhead = 24 * time.Hour
	// maxAhead is how many consecutive records dated past FarAhead are
	// held before they are taken as the log moving on (traffic resuming
	// after a quiet day) rather than as wrong.
	maxAhead = 16
	// maxAheadBytes caps what those records may hold.
	maxAheadBytes = 1 << 20
	// startRecords is how many records of a file date it: the file is
	// opened openLead before the merge reaches the earliest of them, and
	// their median is the time its first records are compared with to
	// find one far ahead.
	startRecords = 64
	// openLead is how long before the earliest of its first records a
	// file is opened: records a little earlier than those may come later
	// in it (a server that logs a request when it ends, stamped with its
	// start), and must be read before the merge passes their time.
	openLead = 5 * time.Minute
	// heldOverhead is what a held record costs besides its bytes.
	heldOverhead = 320
)

// LeftOut counts the records ReadOrdered left out for being dated far
// ahead of the records around them (see FarAhead).
type LeftOut struct {
	// Records is how many were left out.
	Records int64
	// MaxAhead is how far the furthest was ahead of the record that
	// followed the records left out in its file.
	MaxAhead time.Duration
}

// Lateness says why ReadOrdered handed a record on after a later one:
// the bound that a record further out of order than it could put back in
// time order went past.
type Lateness uint8

const (
	// OnTime: no record handed on before it was later.
	OnTime Lateness = iota
	// LateSpan: its line came more than ReorderSpan (of log time) after
	// those of later records of its file, such as a request longer than
	// that logged when it ended and stamped with its start, or more than
	// openLead before the first records of its file, by which the file
	// was opened.
	LateSpan
	// LateMemory: the files open held all they may together (ExtraBytes
	// past their reorderBytes each), so its file handed on later records
	// before its line was read.
	LateMemory
	// LateOpenFiles: its file waited to be opened, its time reached,
	// because MaxOpen others were open.
	LateOpenFiles
)

// ReadOrdered reads the named logs ("-" is o.Stdin; it and a path that is
// not a regular file, such as a pipe, are read once) and calls
// fn for every record in time order, whatever the order of the files and
// of lines within a file, within bounds:
//
//   - files are merged by time: each is read as a stream, and a file is
//     opened five minutes before the merge reaches the earliest time
//     among its first records, so files that follow one another in time
//     are read one after the other and files that overlap are read
//     together (at most 32 at once);
//   - within a file, records are held and handed on earliest first, so
//     that lines written out of order (a load balancer or server that
//     logs a request when it ends, stamped with its start) reach fn in
//     order: each record until the file has been read ReorderSpan past
//     it, and at least 4 MiB of them, within 64 MiB more for all the
//     files open;
//   - a record dated more than FarAhead after every record before it in
//     its file, and followed by one dated more than FarAhead before it,
//     is left out and counted in LeftOut; so are up to 16 such records in
//     a row.
//
// Records further out of order than the bounds reach fn late, after later
// ones, with why (OnTime for the others): replay counts them. The record
// passed to fn is valid only until fn returns. It returns what was read from each
// file, in the order named, like logs.ReadFiles, and its error is
// likewise about opening or reading a file.
func ReadOrdered(names []string, o logs.ReadOptions, fn func(*logs.Record, Lateness)) ([]logs.File, LeftOut, error) {
	return readOrdered(names, o, defaultBounds, fn)
}

// bounds are what the files hold to put records back in time order: each
// hold bytes at least, and records until it has been read span past them
// within extra bytes for all the files open; see the constants.
type bounds struct {
	hold, extra int
	span        time.Duration
}

var defaultBounds = bounds{hold: reorderBytes, extra: ExtraBytes, span: ReorderSpan}

// readOrdered is ReadOrdered within b.
func readOrdered(names []string, o logs.ReadOptions, b bounds, fn func(*logs.Record, Lateness)) ([]logs.File, LeftOut, error) {
	m := &merger{o: o, b: b, fn: fn, files: make([]logs.File, len(names)), once: make([]bool, len(names)),
		clock: math.MinInt64}
	for i, n := range names {
		if n == "-" {
			m.once[i] = true
			continue
		}
		st, err := os.Stat(n)
		if err != nil {
			return nil, LeftOut{}, logs.ReadError(n, err)
		}
		// A pipe or a FIFO (a shell's <(zcat …)) can be read only once,
		// as standard input, and its size is unknown.
		m.once[i] = !st.Mode().IsRegular()
		m.total += st.Size()
	}
	if slices.Contains(m.once, true) {
		m.total = 0
	}
	err := m.run(names)
	for _, s := range m.open {
		s.close()
	}
	if err != nil {
		// What was read before the error, as logs.ReadFiles returns it.
		read := m.files[:0]
		for _, f := range m.files {
			if f.Name != "" {
				read = append(read, f)
			}
		}
		return read, m.left, err
	}
	if o.Progress != nil {
		m.progress()
	}
	return m.files, m.left, nil
}

// A held record is a copy of a Reader's record, with its own bytes.
type held struct {
	rec  logs.Record
	buf  []byte
	wb   [][]byte
	file int    // index in the names, for a stable merge
	seq  uint64 // read order within the file, for a stable sort
}

// size is what h costs while held.
func (h *held) size() int { return heldOverhead + cap(h.buf) + 24*cap(h.wb) }

// set copies src into h. Every byte slice of a Record points into the
// Reader's buffer, so every one is copied (TestHeldCopiesEverySlice holds
// this to the Record type).
func (h *held) set(src *logs.Record, m *merger) {
	n := len(src.Client) + len(src.Method) + len(src.Target) + len(src.Host) + len(src.UserAgent) +
		len(src.Route) + len(src.Session) + len(src.APIClient) + len(src.Rule) + len(src.Decision) + len(src.BlockedBy)
	for _, w := range src.WouldBlock {
		n += len(w)
	}
	if cap(h.buf) < n {
		h.buf = m.bytes(n)
	}
	buf, wb := h.buf[:0], h.wb[:0]
	h.rec = *src
	r := &h.rec
	r.Client, buf = keep(buf, src.Client)
	r.Method, buf = keep(buf, src.Method)
	r.Target, buf = keep(buf, src.Target)
	r.Host, buf = keep(buf, src.Host)
	r.UserAgent, buf = keep(buf, src.UserAgent)
	r.Route, buf = keep(buf, src.Route)
	r.Session, buf = keep(buf, src.Session)
	r.APIClient, buf = keep(buf, src.APIClient)
	r.Rule, buf = keep(buf, src.Rule)
	r.Decision, buf = keep(buf, src.Decision)
	r.BlockedBy, buf = keep(buf, src.BlockedBy)
	for _, w := range src.WouldBlock {
		var c []byte
		c, buf = keep(buf, w)
		wb = append(wb, c)
	}
	r.WouldBlock = wb
	h.buf, h.wb = buf, wb
}

// keep appends b to buf, which has room for it, and returns the copy.
func keep(buf, b []byte) (kept, grown []byte) {
	if len(b) == 0 {
		return nil, buf
	}
	start := len(buf)
	buf = append(buf, b...)
	return buf[start:len(buf):len(buf)], buf
}

// before orders held records by time, then file, then line.
func before(a, b *held) bool {
	if a.rec.Time != b.rec.Time {
		return a.rec.Time < b.rec.Time
	}
	if a.file != b.file {
		return a.file < b.file
	}
	return a.seq < b.seq
}

// recordHeap is a min-heap of one file's held records by time, then
// read order. The keys sit in the heap's array, not behind its
// pointers: with thousands of records held, comparing them is then not a
// cache miss each.
type recordHeap []heapEntry

type heapEntry struct {
	time int64
	seq  uint64
	h    *held
}

func (e heapEntry) less(f heapEntry) bool {
	return e.time < f.time || e.time == f.time && e.seq < f.seq
}

func (q *recordHeap) push(h *held) {
	a := append(*q, heapEntry{time: h.rec.Time, seq: h.seq, h: h})
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !a[i].less(a[p]) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
	*q = a
}

func (q *recordHeap) pop() *held {
	a := *q
	top := a[0].h
	n := len(a) - 1
	a[0] = a[n]
	a[n] = heapEntry{}
	a = a[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && a[c+1].less(a[c]) {
			c++
		}
		if !a[c].less(a[i]) {
			break
		}
		a[i], a[c] = a[c], a[i]
		i = c
	}
	*q = a
	return top
}

// A stream reads one file: records go through the far-ahead check into
// the reorder heap, whose earliest is the stream's head.
type stream struct {
	m      *merger
	index  int
	name   string
	in     *logs.Input
	done   int64 // of in.BytesRead(), what the merger's progress has counted as done
	heap   recordHeap
	ahead  []*held // records dated past FarAhead, not yet judged
	bytes  int     // held in heap and ahead
	aheadB int
	ref    int64 // latest time of the records taken from the file
	seq    uint64
	eof    bool
	peek   bool  // opened only to date the file: its bytes are read again
	start  int64 // earliest time among the first records
	waited bool  // opened late: MaxOpen others were open when its time came
	// stop is why fill stopped with the head it has; popped is the latest
	// time handed on from the file, and poppedWhy the stop of its record:
	// why a record read after it and older had not been read in time.
	stop      Lateness
	popped    int64
	poppedWhy Lateness
	// first are the file's first records, read to date it.
	first []*held
}

// openStream opens a file and reads its first records, to date it.
func (m *merger) openStream(index int, name string, peek bool) (*stream, error) {
	s := &stream{m: m, index: index, name: name, peek: peek, popped: math.MinInt64}
	in, err := logs.Open(name, m.o)
	if err != nil {
		return nil, err
	}
	s.in = in
	s.start = math.MaxInt64
	for len(s.first) < startRecords {
		if !s.in.Next() {
			if err := s.finish(); err != nil {
				return nil, err
			}
			break
		}
		h := m.get()
		h.set(s.in.Record(), s.m)
		h.file, h.seq = s.index, s.seq
		s.seq++
		s.bytes += h.size()
		s.first = append(s.first, h)
		s.start = min(s.start, h.rec.Time)
	}
	if len(s.first) > 0 {
		times := make([]int64, len(s.first))
		for i, h := range s.first {
			times[i] = h.rec.Time
		}
		slices.Sort(times)
		s.ref = times[len(times)/2]
	}
	return s, nil
}

// finish ends the reading of the file: its counts, and its error.
func (s *stream) finish() error {
	if s.eof {
		return nil
	}
	s.eof = true
	f := &s.m.files[s.index]
	f.Name, f.Format = s.name, s.in.Format().String()
	f.Counts = s.in.Counts()
	f.FirstUnparsedLine, _ = s.in.FirstUnparsed()
	err := s.in.Err()
	if !s.peek {
		s.m.doneClosed += s.in.BytesRead() - s.done
		s.done = s.in.BytesRead()
	}
	s.close()
	return err
}

func (s *stream) close() {
	if s.in != nil {
		s.in.Close()
	}
}

// fill reads until the stream may hand on its head (see more), or the
// file ends.
func (s *stream) fill() error {
	for _, h := range s.first {
		s.take(h)
	}
	s.first = nil
	for !s.eof {
		more, why := s.more()
		if !more {
			s.stop = why
			break
		}
		if !s.in.Next() {
			if err := s.finish(); err != nil {
				return err
			}
			break
		}
		h := s.m.get()
		h.set(s.in.Record(), s.m)
		h.file, h.seq = s.index, s.seq
		s.seq++
		s.bytes += h.size()
		s.take(h)
		s.m.records++
		if s.m.o.Progress != nil && s.m.records%(1<<16) == 0 {
			s.m.progress()
		}
	}
	if s.eof {
		// Nothing came back from past the jump: the log moved on.
		s.accept()
	}
	return nil
}

// more reports whether the stream reads on before its head goes: it has
// none, holds less than the bounds' hold, or has not been read their span
// past its head while the files open hold less than their extra past
// hold each. When it does not, it says which bound its head goes by:
// LateSpan or LateMemory, why a record read after it and older is late.
func (s *stream) more() (bool, Lateness) {
	b := &s.m.b
	switch {
	case len(s.heap) == 0 || s.bytes < b.hold:
		return true, OnTime
	case s.ref >= sat(s.heap[0].time, int64(b.span)):
		return false, LateSpan
	}
	extra := max(0, s.bytes-b.hold)
	for _, o := range s.m.open {
		if o != s {
			extra += max(0, o.bytes-b.hold)
		}
	}
	if extra < b.extra {
		return true, OnTime
	}
	return false, LateMemory
}

// take puts a record through the far-ahead check.
func (s *stream) take(h *held) {
	t := h.rec.Time
	if len(s.ahead) > 0 {
		earliest := s.ahead[0].rec.Time
		for _, a := range s.ahead[1:] {
			earliest = min(earliest, a.rec.Time)
		}
		switch {
		case t < sat(earliest, -int64(FarAhead)):
			// The file came back: the records ahead were wrong.
			s.dropAhead(t)
		case t > sat(s.ref, int64(FarAhead)):
			s.holdAhead(h)
			if len(s.ahead) >= maxAhead || s.aheadB >= maxAheadBytes {
				s.accept()
			}
			return
		default:
			s.accept()
		}
	}
	if t > sat(s.ref, int64(FarAhead)) {
		s.holdAhead(h)
		return
	}
	s.ref = max(s.ref, t)
	s.heap.push(h)
}

func (s *stream) holdAhead(h *held) {
	s.ahead = append(s.ahead, h)
	s.aheadB += h.size()
}

// accept takes the records held ahead as the log's.
func (s *stream) accept() {
	for _, a := range s.ahead {
		s.ref = max(s.ref, a.rec.Time)
		s.heap.push(a)
	}
	s.ahead, s.aheadB = s.ahead[:0], 0
}

// dropAhead leaves out the records held ahead, which a record dated back
// at t followed.
func (s *stream) dropAhead(back int64) {
	for _, a := range s.ahead {
		s.m.left.Records++
		s.m.left.MaxAhead = max(s.m.left.MaxAhead, time.Duration(a.rec.Time-back))
		s.bytes -= a.size()
		s.m.put(a)
	}
	s.ahead, s.aheadB = s.ahead[:0], 0
}

// head returns the stream's earliest record, nil when it has none left.
func (s *stream) head() *held {
	if len(s.heap) == 0 {
		return nil
	}
	return s.heap[0].h
}

// pop removes the head, and says why it would be late if a record
// handed on before it was later: a record of its own file was (it was
// read after that one went, for the bound that one went by), or else
// another file's was, and then its file was opened after that record
// went, for it waited (LateOpenFiles) or its first records were dated
// more than openLead after it (LateSpan).
func (s *stream) pop() (*held, Lateness) {
	h := s.heap.pop()
	s.bytes -= h.size()
	why := s.poppedWhy
	switch {
	case h.rec.Time < s.popped:
	case s.waited:
		why = LateOpenFiles
	default:
		why = LateSpan
	}
	if h.rec.Time > s.popped {
		s.popped, s.poppedWhy = h.rec.Time, s.stop
	}
	return h, why
}

// merger merges streams by their heads.
type merger struct {
	o          logs.ReadOptions
	b          bounds
	fn         func(*logs.Record, Lateness)
	clock      int64 // the latest time handed on
	files      []logs.File
	once       []bool // by file: standard input, a pipe: read only once
	left       LeftOut
	open       []*stream // by head
	free       []*held
	batch      []held // made, not yet used
	slab       []byte // for held records' bytes
	total      int64
	done       int64
	doneClosed int64
	records    int64
}

// pending is a file not yet opened, with the earliest time among its
// first records.
type pending struct {
	index  int
	name   string
	start  int64
	s      *stream // standard input or a pipe, opened to date it
	waited bool    // its time came while MaxOpen files were open
}

func (m *merger) run(names []string) error {
	var queue []pending
	if len(names) == 1 {
		queue = append(queue, pending{index: 0, name: names[0]})
	} else {
		// Date every file by its first records, then open them in that
		// order as the merge reaches them.
		for i, n := range names {
			s, err := m.openStream(i, n, !m.once[i])
			if err != nil {
				return err
			}
			p := pending{index: i, name: n, start: s.start}
			if m.once[i] {
				p.s = s // it can be read only once: keep it
			} else {
				for _, h := range s.first {
					m.put(h)
				}
				s.close()
				m.files[i] = logs.File{}
			}
			queue = append(queue, p)
		}
		slices.SortStableFunc(queue, func(a, b pending) int {
			switch {
			case a.start < b.start:
				return -1
			case a.start > b.start:
				return 1
			}
			return 0
		})
	}
	var cur *held
	waited := 0 // how many of queue, from the first, the merge reached while MaxOpen were open
	for {
		// Open the files the merge has reached.
		for len(queue) > 0 && len(m.open) < MaxOpen {
			if h := m.headOf(); h != nil && sat(queue[0].start, -int64(openLead)) > h.rec.Time {
				break
			}
			p := queue[0]
			queue = queue[1:]
			waited = max(0, waited-1)
			s := p.s
			if s == nil {
				var err error
				if s, err = m.openStream(p.index, p.name, false); err != nil {
					return err
				}
			}
			s.waited = p.waited
			if err := s.fill(); err != nil {
				return err
			}
			if s.head() != nil {
				m.open = append(m.open, s)
			}
		}
		if len(m.open) == 0 {
			break // the loop above opened every file left
		}
		// The earliest head goes next.
		best := 0
		for i, s := range m.open[1:] {
			if before(s.head(), m.open[best].head()) {
				best = i + 1
			}
		}
		s := m.open[best]
		// The files the merge has reached that cannot be opened yet wait:
		// those of their records older than the merge when they are
		// opened are late.
		for len(m.open) >= MaxOpen && waited < len(queue) &&
			sat(queue[waited].start, -int64(openLead)) <= s.head().rec.Time {
			queue[waited].waited = true
			waited++
		}
		if cur != nil {
			m.put(cur)
		}
		var why Lateness
		cur, why = s.pop()
		if cur.rec.Time >= m.clock {
			why = OnTime
		}
		m.clock = max(m.clock, cur.rec.Time)
		m.fn(&cur.rec, why)
		if err := s.fill(); err != nil {
			return err
		}
		if s.head() == nil {
			m.open = slices.Delete(m.open, best, best+1)
		}
	}
	return nil
}

// headOf returns the earliest head among the open streams.
func (m *merger) headOf() *held {
	var best *held
	for _, s := range m.open {
		if h := s.head(); h != nil && (best == nil || before(h, best)) {
			best = h
		}
	}
	return best
}

func (m *merger) progress() {
	m.done = m.doneClosed
	for _, s := range m.open {
		m.done += s.in.BytesRead() - s.done
	}
	m.o.Progress(m.done, m.total)
}

// get returns a held record to fill, reused when one is free. New ones
// are made in batches, as their bytes are (see bytes): a file's first
// reorderBytes are thousands of records, and one allocation each was
// most of the cost of holding them.
func (m *merger) get() *held {
	if n := len(m.free); n > 0 {
		h := m.free[n-1]
		m.free = m.free[:n-1]
		return h
	}
	if len(m.batch) == 0 {
		m.batch = make([]held, 128)
	}
	h := &m.batch[0]
	m.batch = m.batch[1:]
	return h
}

// bytes returns an empty slice with room for at least n bytes, cut from
// a shared slab. A held record keeps its slice for the records it holds
// next; a slab is freed when no record uses a slice of it.
func (m *merger) bytes(n int) []byte {
	n = (n + 63) &^ 63
	if n > len(m.slab) {
		if n > 16<<10 {
			return make([]byte, 0, n)
		}
		m.slab = make([]byte, 256<<10)
	}
	b := m.slab[:0:n]
	m.slab = m.slab[n:]
	return b
}

// put frees a held record for reuse.
func (m *merger) put(h *held) {
	if len(m.free) < 1<<16 {
		m.free = append(m.free, h)
	}
}

// sat returns a+d, held within the int64 range (times of records
// centuries away).
func sat(a, d int64) int64 {
	switch {
	case d > 0 && a > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && a < math.MinInt64-d:
		return math.MinInt64
	}
	return a + d
}
