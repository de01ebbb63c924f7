package calllog

import (
	"bytes"
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
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
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
		if err := rotate(f, path); err != nil {
			return false, err
		}
		return true, nil
	}
	if _, err := f.Write(data); err != nil {
		return false, fmt.Errorf("writing log file %s: %w", path, err)
	}
	return false, nil
}

// rotate renames the log to "<path>.1", replacing the previous rotated log.
// Both must be call logs (isCallLog): a logFile that names a file of
// something else, or a "<path>.1" that is not ours, is never renamed or
// replaced, and the line is not written.
func rotate(f *os.File, path string) error {
	if !isCallLog(f) {
		return fmt.Errorf("log file %s is past its size limit and does not hold call log lines: not rotating (or writing to) a file that is not ours", path)
	}
	old, err := os.OpenFile(path+".1", os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return fmt.Errorf("log file %s.1: %w: not rotating over it", path, err)
	default:
		ours := isCallLog(old)
		old.Close()
		if !ours {
			return fmt.Errorf("log file %s.1 exists and does not hold call log lines: not rotating over it", path)
		}
	}
	if err := os.Rename(path, path+".1"); err != nil {
		return fmt.Errorf("rotating log file %s: %w", path, err)
	}
	return nil
}

// isCallLog reports whether the regular file f begins with a line this
// package wrote (or is empty).
func isCallLog(f *os.File) bool {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false
	}
	// A line starts with the time (an RFC 3339 text of at most 35 bytes)
	// and the pid.
	head := make([]byte, 64)
	n, _ := f.ReadAt(head, 0)
	if n == 0 {
		return st.Size == 0
	}
	return bytes.HasPrefix(head[:n], []byte(`{"time":"`)) && bytes.Contains(head[:n], []byte(`","pid":`))
}
