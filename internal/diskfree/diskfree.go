// Package diskfree refuses new work when the state disk is nearly full, so
// that a host running unattended stops admitting runs before it fills the
// disk (running steps go on, their journals capped).
package diskfree

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Defaults of a Guard: the threshold is the smaller of DefaultPercent of
// the disk and DefaultBytes.
const (
	DefaultPercent = 1
	DefaultBytes   = 200 << 20
)

// Space is what a filesystem holds.
type Space struct {
	Free  uint64 // bytes available to this user
	Total uint64 // size of the filesystem in bytes
}

// Func measures the filesystem that holds path.
type Func func(path string) (Space, error)

// Statfs measures the filesystem that holds path with statfs(2).
func Statfs(path string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return Space{}, fmt.Errorf("measure free space of %s: %w", path, err)
	}
	bsize := uint64(st.Bsize) //nolint:gosec // block sizes are positive
	return Space{Free: st.Bavail * bsize, Total: st.Blocks * bsize}, nil
}

// ErrLow is what a refusal wraps: errors.Is(err, diskfree.ErrLow).
var ErrLow = errors.New("the state disk is nearly full")

// LowError refuses new work: the disk holding Path has Free bytes left,
// under Threshold.
type LowError struct {
	Path      string
	Free      uint64
	Threshold uint64
}

func (e *LowError) Error() string {
	return fmt.Sprintf("the state disk has %s free (under %s, at %s); free space or move the state folder, then try again (new runs and fires are refused, running steps go on)",
		size(e.Free), size(e.Threshold), e.Path)
}

// size is n bytes in MB, or in KB under a megabyte (a small disk's
// threshold would read "0 MB").
func size(n uint64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d MB", n>>20)
}

func (e *LowError) Unwrap() error { return ErrLow }

// Guard checks the disk of Path before new work is admitted; a Guard
// without a Path checks nothing (state kept in memory). The zero value of
// every other field is the default. It is safe for concurrent use.
type Guard struct {
	Path string
	// MinFree, when not 0, is the threshold in bytes; else MinFreePercent,
	// when not 0, is the threshold as a percent of the disk's size; default
	// the smaller of DefaultPercent of the disk and DefaultBytes.
	MinFree        uint64
	MinFreePercent float64
	// Measure measures the disk; default Statfs (tests give a fake).
	Measure Func
}

// Check returns a *LowError when the disk has less free space than the
// threshold. A disk that cannot be measured is not refused: the guard
// must never stop a host it cannot judge.
func (g *Guard) Check() error {
	if g == nil || g.Path == "" {
		return nil
	}
	measure := g.Measure
	if measure == nil {
		measure = Statfs
	}
	sp, err := measure(g.Path)
	if err != nil {
		return nil
	}
	threshold := g.MinFree
	switch {
	case threshold != 0:
	case g.MinFreePercent > 0:
		threshold = uint64(float64(sp.Total) * g.MinFreePercent / 100)
	default:
		threshold = min(sp.Total/100*DefaultPercent, DefaultBytes)
	}
	if sp.Free < threshold {
		return &LowError{Path: g.Path, Free: sp.Free, Threshold: threshold}
	}
	return nil
}
