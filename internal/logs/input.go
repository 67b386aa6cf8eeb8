package logs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// File is what reading one log found.
type File struct {
	// Name is the file name, "-" for standard input.
	Name string `json:"name"`
	// Format is the format read (given or detected); "auto" when none
	// could be detected (every line then counts as unparsed).
	Format string `json:"format"`
	Counts
	// FirstUnparsedLine is the number of the first line that did not
	// parse, 0 if all did: its line number in the file, blank lines
	// included. Its content is not kept: it may hold a client address.
	FirstUnparsedLine int64 `json:"first_unparsed_line,omitempty"`
}

// ReadOptions configure ReadFiles.
type ReadOptions struct {
	// Format is the format of every file; Auto detects each file's.
	Format Format
	// Stdin is read for the name "-".
	Stdin io.Reader
	// Progress, if set, is called now and then with the bytes read so far
	// (compressed bytes for gzip files) and the total size of the files,
	// 0 when unknown (standard input is read).
	Progress func(done, total int64)
}

// progressEvery is how many records pass between calls of Progress.
const progressEvery = 1 << 16

// ReadFiles reads the named logs in turn ("-" is o.Stdin) and calls fn for
// every record. It returns what it found in each file. Lines that do not
// parse are counted, never an error; the error is about opening or reading
// a file, and ends the reading.
func ReadFiles(names []string, o ReadOptions, fn func(*Record)) ([]File, error) {
	var total int64
	for _, n := range names {
		if n == "-" {
			total = 0
			break
		}
		st, err := os.Stat(n)
		if err != nil {
			return nil, ReadError(n, err)
		}
		if st.IsDir() {
			// Refused before any file is read, and in the same words
			// on every system.
			return nil, fmt.Errorf("read %s: is a directory", n)
		}
		total += st.Size()
	}
	var done int64
	files := make([]File, 0, len(names))
	for _, n := range names {
		f, err := readFile(n, o, fn, &done, total)
		files = append(files, f)
		if err != nil {
			return files, err
		}
	}
	if o.Progress != nil {
		o.Progress(done, total)
	}
	return files, nil
}

// ReadError says which file could not be read and why, without the
// system call and the path an os.PathError carries ("read x.log: read
// x.log: is a directory").
func ReadError(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("read %s: %w", name, err)
}

// An Input is one file opened as ReadFiles opens it — a path, or "-" for
// o.Stdin; gzip read as it is — read through a Reader of o.Format, the
// bytes it took from the file counted.
type Input struct {
	*Reader
	name string
	fh   *os.File // nil for standard input
	cr   countingReader
}

// Open opens the input name as ReadFiles does; Close it when done.
func Open(name string, o ReadOptions) (*Input, error) {
	in := &Input{name: name}
	if name == "-" {
		if o.Stdin == nil {
			return nil, fmt.Errorf("read -: no standard input")
		}
		in.cr.r = o.Stdin
	} else {
		fh, err := os.Open(name)
		if err != nil {
			return nil, ReadError(name, err)
		}
		in.fh, in.cr.r = fh, fh
	}
	rd, err := NewReader(&in.cr, o.Format)
	if err != nil {
		in.Close()
		return nil, ReadError(name, err)
	}
	in.Reader = rd
	return in, nil
}

// BytesRead is how many bytes have been taken from the file (as stored:
// a gzip file's compressed bytes).
func (in *Input) BytesRead() int64 { return in.cr.n }

// Err is the Reader's error, naming the input.
func (in *Input) Err() error {
	if err := in.Reader.Err(); err != nil {
		return ReadError(in.name, err)
	}
	return nil
}

// Close closes the file; standard input is left open.
func (in *Input) Close() error {
	if in.fh == nil {
		return nil
	}
	err := in.fh.Close()
	in.fh = nil
	return err
}

func readFile(name string, o ReadOptions, fn func(*Record), done *int64, total int64) (File, error) {
	res := File{Name: name}
	in, err := Open(name, o)
	if err != nil {
		return res, err
	}
	defer in.Close()
	res.Format = in.Format().String()
	base := *done
	for i := 0; in.Next(); i++ {
		fn(in.Record())
		if o.Progress != nil && i%progressEvery == progressEvery-1 {
			o.Progress(base+in.BytesRead(), total)
		}
	}
	*done = base + in.BytesRead()
	res.Counts = in.Counts()
	res.FirstUnparsedLine, _ = in.FirstUnparsed()
	return res, in.Err()
}

// NoRecords returns the error of a reading of files in which no line
// gave a record, or nil if one did. It names the files that held no line
// at all (empty, or only blank lines): every line of the others was
// counted as not parsed, which their Counts say, file by file.
func NoRecords(files []File) error {
	for _, f := range files {
		if f.Parsed > 0 {
			return nil
		}
	}
	const none = "no line of the input could be read as a log record"
	var empty []string
	for _, f := range files {
		if f.Lines == 0 {
			name := f.Name
			if name == "-" {
				name = "standard input"
			}
			empty = append(empty, name)
		}
	}
	// A glob of many empty files names a few of them.
	const named = 3
	switch n := len(empty); {
	case n == 0:
		return errors.New(none)
	case n == 1:
		return fmt.Errorf("%s: %s is empty", none, empty[0])
	case n <= named:
		return fmt.Errorf("%s: %s and %s are empty", none, strings.Join(empty[:n-1], ", "), empty[n-1])
	default:
		return fmt.Errorf("%s: %s and %d other files are empty", none, strings.Join(empty[:named], ", "), n-named)
	}
}

type countingReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader, counting the bytes.
func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Total adds up the counts of files.
func Total(files []File) Counts {
	var c Counts
	for _, f := range files {
		c.Add(f.Counts)
	}
	return c
}
