package calllog

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// maxRotatedUnderUs bounds the attempts of appendLine.
const maxRotatedUnderUs = 64

// appendLine appends data to the log file with one write(2) under an
// exclusive flock, rotating the file first when the line would take it past
// limit. The lock serialises rotation; O_APPEND alone already keeps
// parallel lines whole.
func appendLine(path string, data []byte, limit int64) error {
	// Each attempt that finds the file rotated under it means another
	// writer rotated, that is, wrote: with many plugins logging at once
	// and a small limit, one writer can lose several times in a row (three
	// was too few for 8 writers on 2 cores), but never without the others
	// getting on.
	for attempt := 0; attempt < maxRotatedUnderUs; attempt++ {
		f, err := openLog(path)
		if err != nil {
			return err
		}
		again, err := appendLocked(f, path, data, limit)
		f.Close()
		if !again {
			return err
		}
	}
	return fmt.Errorf("log file %s: rotated under us %d times", path, maxRotatedUnderUs)
}

// openLog opens the log for appending, creating it 0600, never through a
// symbolic link.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log file: %w", err)
	}
	return f, nil
}

// appendLocked writes under the lock; again is true when another process
// rotated the file between open and lock, so the caller opens it anew.
func appendLocked(f *os.File, path string, data []byte, limit int64) (again bool, err error) {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return false, fmt.Errorf("locking log file %s: %w", path, err)
	}
	var opened, current unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &opened); err != nil {
		return false, fmt.Errorf("log file %s: %w", path, err)
	}
	err = unix.Stat(path, &current)
	if errors.Is(err, unix.ENOENT) || err == nil && current.Ino != opened.Ino {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("log file %s: %w", path, err)
	}
	if opened.Size > 0 && opened.Size+int64(len(data)) > limit {
		if err := os.Rename(path, path+".1"); err != nil {
			return false, fmt.Errorf("rotating log file %s: %w", path, err)
		}
		return true, nil
	}
	if _, err := f.Write(data); err != nil {
		return false, fmt.Errorf("writing log file %s: %w", path, err)
	}
	return false, nil
}
