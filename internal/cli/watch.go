package cli

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchFile calls changed whenever the content of the file at path
// changes, until ctx ends. It watches the file's directory, not the file,
// so that editors that save by renaming and Kubernetes ConfigMaps (which
// swap a symlink) are seen too. A file that appears whole (a create or a
// rename in the directory: an atomic replacement) is read at once,
// after a short debounce; a file written in place only once it has had
// no write for settle, so that a half-written file is never applied.
// changed is called only when the bytes differ from the last ones seen,
// or when the file cannot be read where it could before. A path that is a
// symlink to a file in another directory has that directory watched too
// (as it is after each read, the link may be changed to point elsewhere),
// so that the file it names is seen replaced or written in place.
//
// loaded is the SHA-256 of the bytes the caller loaded: a file that
// already differs when the watch begins (changed between the load and
// the watch) is read at once.
func watchFile(ctx context.Context, path string, loaded [32]byte, settle time.Duration, changed func(), logger *slog.Logger) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		w.Close()
		return err
	}
	if err := w.Add(filepath.Dir(abs)); err != nil {
		w.Close()
		return err
	}
	target := watchTarget(w, abs, logger)
	last := loaded
	go func() {
		defer w.Close()
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		if fileSum(abs) != last {
			timer.Reset(replaceDebounce)
		}
		var st settling
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Name == target {
					ev.Name = abs // the file the link names is the file
				}
				if d, ok := st.delay(ev, abs, settle); ok {
					timer.Reset(d)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				logger.Warn("configuration watch", "error", err.Error())
			case <-timer.C:
				st.writing = false
				target = watchTarget(w, abs, logger)
				// A file that can no longer be read (removed, or
				// replaced by one floodgate may not read) is a change
				// too: the reload says why, where silence would leave
				// it to the next restart to fail.
				if sum := fileSum(abs); sum != last {
					last = sum
					changed()
				}
			}
		}
	}()
	return nil
}

// watchTarget returns the file that path, a symlink, names (path itself
// when it is none or cannot be resolved), and adds its directory to w's
// when it is another one and not watched yet.
func watchTarget(w *fsnotify.Watcher, path string, logger *slog.Logger) string {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path
	}
	if dir := filepath.Dir(target); dir != filepath.Dir(path) && !slices.Contains(w.WatchList(), dir) {
		if err := w.Add(dir); err != nil {
			logger.Warn("configuration watch: the directory of the file the configuration links to cannot be watched; reload with SIGHUP", "dir", dir, "error", err.Error())
		}
	}
	return target
}

// replaceDebounce is how long the watcher waits after a create or rename
// in the file's directory: the events of one replacement come together.
const replaceDebounce = 100 * time.Millisecond

// settling is what the watcher knows of the file between two reads.
type settling struct {
	writing bool // the file has been written in place since the last read
}

// delay says how long after ev the file at path is to be read: soon after
// an atomic replacement (a create or rename in its directory, as a
// ConfigMap's "..data" symlink swap is), settle after a write to the file
// itself (reset by every further write); ok is false for an event that
// changes nothing (a write to another file). While the file is being
// written in place, only the replacement of the file itself cuts the wait
// short: another file appearing beside it does not.
func (s *settling) delay(ev fsnotify.Event, path string, settle time.Duration) (d time.Duration, ok bool) {
	switch {
	case ev.Name == path && (ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) || ev.Has(fsnotify.Remove)):
		s.writing = false
		return replaceDebounce, true
	case ev.Name == path && (ev.Has(fsnotify.Write) || ev.Has(fsnotify.Chmod)):
		s.writing = true
		return settle, true
	case s.writing:
		return 0, false
	case ev.Has(fsnotify.Create), ev.Has(fsnotify.Rename):
		return replaceDebounce, true
	}
	return 0, false
}

// fileSum is the SHA-256 of the file's bytes, zero when it cannot be read.
func fileSum(path string) [32]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}
	}
	return sha256.Sum256(data)
}
