package host

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/cairnhq/cairn/internal/diskfree"
)

// DiskSettings is the disk: section: when new runs and fires are refused
// for lack of space on the state disk.
type DiskSettings struct {
	MinFree MinFree `yaml:"min_free"`
}

// MinFree is the free-space threshold of the disk guard: a percent of the
// disk ("2%") or a size ("500MiB"). Zero: the guard's default, the
// smaller of 1% and 200 MB.
type MinFree struct {
	Percent float64
	Bytes   ByteSize
}

// Limits of disk.min_free: a guard that refuses at half the disk, or at
// under a megabyte, is a typo.
const (
	maxMinFreePercent = 50
	minMinFreeBytes   = 1 << 20
)

// UnmarshalYAML reads a percent or a size.
func (m *MinFree) UnmarshalYAML(n *yaml.Node) error {
	if num, ok := strings.CutSuffix(strings.TrimSpace(n.Value), "%"); ok && n.Kind == yaml.ScalarNode {
		v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
		if err != nil {
			return fmt.Errorf("line %d: %q is not a percent (write 1%%, 0.5%%)", n.Line, n.Value)
		}
		*m = MinFree{Percent: v}
		return nil
	}
	var b ByteSize
	if err := b.UnmarshalYAML(n); err != nil {
		return fmt.Errorf("%w, or a percent of the disk such as 1%%", err)
	}
	*m = MinFree{Bytes: b}
	return nil
}

// check refuses a threshold that would stop every launch or none.
func (m MinFree) check() error {
	if m.Percent != 0 && (m.Percent < 0.01 || m.Percent > maxMinFreePercent) {
		return fmt.Errorf("disk.min_free is %g%%; use 0.01%% to %d%%, or a size such as 200MB", m.Percent, maxMinFreePercent)
	}
	if m.Bytes != 0 && m.Bytes < minMinFreeBytes {
		return fmt.Errorf("disk.min_free is %d bytes; use at least 1MiB, or a percent such as 1%%", m.Bytes)
	}
	return nil
}

// guard is the disk guard of a state folder at path with this threshold.
func (m MinFree) guard(path string) *diskfree.Guard {
	return &diskfree.Guard{Path: path, MinFree: uint64(m.Bytes), MinFreePercent: m.Percent}
}
