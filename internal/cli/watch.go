package cli

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchFile calls changed whenever the content of the file at path
// changes, until ctx ends. It watches the file's directory, not the file,
// so that editors that save by renaming and Kubernetes ConfigMaps (which
// swap a symlink) are seen too; events are debounced, and changed is
// called only when the bytes differ from the last ones seen.
func watchFile(ctx context.Context, path string, changed func(), logger *slog.Logger) error {
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
	last := fileSum(abs)
	go func() {
		defer w.Close()
		const quiet = 200 * time.Millisecond
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-w.Events:
				if !ok {
					return
				}
				timer.Reset(quiet)
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				logger.Warn("configuration watch", "error", err.Error())
			case <-timer.C:
				if sum := fileSum(abs); sum != last && sum != [32]byte{} {
					last = sum
					changed()
				}
			}
		}
	}()
	return nil
}

func fileSum(path string) [32]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}
	}
	return sha256.Sum256(data)
}
