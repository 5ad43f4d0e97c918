package host

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cairnhq/cairn/automations/policy"
	"github.com/cairnhq/cairn/notify"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/workspace"
)

// ConfigFile is the user's settings file inside the workspace's .cairn/
// folder. No tool writes it.
const ConfigFile = "config.yaml"

// maxConfigBytes bounds what Open reads of the config file.
const maxConfigBytes = 1 << 20

// Settings is .cairn/config.yaml. Every key is documented in the README;
// an unknown key is an error, so a misspelt setting is never silently
// ignored.
type Settings struct {
	// WorkspaceID names the workspace on every machine (store_open.go):
	// its state folder and its PostgreSQL schema; required with store.url.
	WorkspaceID string `yaml:"workspace_id"`

	Sessions  SessionSettings   `yaml:"sessions"`
	Journal   JournalSettings   `yaml:"journal"`
	Retention RetentionSettings `yaml:"retention"`
	Env       EnvSettings       `yaml:"env"`
	Notify    notify.Settings   `yaml:"notify"`
	Disk      DiskSettings      `yaml:"disk"`
	Store     StoreSettings     `yaml:"store"`
	Agents    AgentSettings     `yaml:"agents"`
	Workflows WorkflowSettings  `yaml:"workflows"`
	// Automations is the automations: section.
	Automations AutomationSettings `yaml:"automations"`
	// Coordination is the coordination: section (coordination.go).
	Coordination CoordinationSettings `yaml:"coordination"`
}

// AutomationSettings is the automations: section.
type AutomationSettings struct {
	// PauseAfterFailures pauses an automation whose fires failed this
	// many times in a row; nil: policy.DefaultPauseAfter; 0: never.
	PauseAfterFailures *int `yaml:"pause_after_failures"`
}

// maxPauseAfter bounds automations.pause_after_failures.
const maxPauseAfter = 1000

// pauseAfter is the scheduler's Config.PauseAfter.
func (a AutomationSettings) pauseAfter() int {
	if a.PauseAfterFailures == nil {
		return policy.DefaultPauseAfter
	}
	return *a.PauseAfterFailures
}

// StoreSettings is the store: section.
type StoreSettings struct {
	// BusyTimeout is how long a write waits for another process's write
	// lock; nil: sqlite.DefaultWriteWait.
	BusyTimeout *Duration `yaml:"busy_timeout"`
	// URL selects a PostgreSQL store shared by several machines
	// (CAIRN_DATABASE_URL wins over it; see store_open.go).
	URL string `yaml:"url"`
}

// JournalSettings is the journal: section: the caps of run output
// journals (runs.Options.JournalRunCap and JournalLineCap). Zero: the
// engine's default.
type JournalSettings struct {
	PerRun  ByteSize `yaml:"per_run"`
	PerLine ByteSize `yaml:"per_line"`
}

// ByteSize is a number of bytes, written as an integer or with a unit:
// 512KiB, 16MiB, 1GiB (or KB, MB, GB, in powers of 1000).
type ByteSize int64

// byteUnits are the units a ByteSize may have, longest first.
var byteUnits = []struct {
	suffix string
	n      int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

// UnmarshalYAML reads an integer or a number with a unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	mult := int64(1)
	for _, u := range byteUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.n
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if n.Kind != yaml.ScalarNode || err != nil || v < 0 || v > (1<<62)/mult {
		return fmt.Errorf("line %d: %q is not a size (write bytes, or a number with KiB, MiB or GiB)", n.Line, n.Value)
	}
	*b = ByteSize(v * mult)
	return nil
}

// SessionSettings is the sessions: section.
type SessionSettings struct {
	// MaxArchives is the number of complete compaction archives kept per
	// session; nil: the default (sessions.DefaultMaxArchives); 0: all.
	MaxArchives *int `yaml:"max_archives"`
}

// LoadSettings reads the workspace's .cairn/config.yaml. A missing file
// gives the zero Settings (every default).
func LoadSettings(ws *workspace.Workspace) (Settings, error) {
	p := filepath.Join(ws.DefsDir(), ConfigFile)
	var s Settings
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if len(b) > maxConfigBytes {
		return s, fmt.Errorf("read config %s: larger than %d bytes", p, maxConfigBytes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return s, fmt.Errorf("read config %s: %w (the keys are listed in the README, under Configuration)", p, err)
	}
	if n := s.Sessions.MaxArchives; n != nil && *n < 0 {
		return s, fmt.Errorf("read config %s: sessions.max_archives is %d; use 0 (keep all) or more", p, *n)
	}
	if err := s.checkShared(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if err := s.Journal.check(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if err := s.Disk.MinFree.check(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if d := s.Store.BusyTimeout; d != nil && time.Duration(*d) < time.Second {
		return s, fmt.Errorf("read config %s: store.busy_timeout is %s; use at least 1s", p, time.Duration(*d))
	}
	if err := s.Retention.validate(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if err := s.Env.check(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if err := s.Notify.Validate(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if _, err := s.Agents.Policy(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if err := s.Workflows.validate(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if err := s.Coordination.check(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	if n := s.Automations.PauseAfterFailures; n != nil && (*n < 0 || *n > maxPauseAfter) {
		return s, fmt.Errorf("read config %s: automations.pause_after_failures is %d; use 0 (never pause) to %d", p, *n, maxPauseAfter)
	}
	return s, nil
}

// check refuses caps the engine cannot keep.
func (j JournalSettings) check() error {
	if j.PerRun != 0 && j.PerRun < runs.MinJournalRunCap {
		return fmt.Errorf("journal.per_run is %d bytes; use at least %d (4KiB)", j.PerRun, runs.MinJournalRunCap)
	}
	if j.PerLine != 0 && (j.PerLine < runs.MinJournalLineCap || j.PerLine > runs.MaxJournalLineCap) {
		return fmt.Errorf("journal.per_line is %d bytes; use %d to %d (16MiB)", j.PerLine, runs.MinJournalLineCap, runs.MaxJournalLineCap)
	}
	perRun := cmp.Or(j.PerRun, runs.DefaultJournalRunCap)
	if j.PerLine > perRun {
		return fmt.Errorf("journal.per_line (%d bytes) is larger than journal.per_run (%d bytes)", j.PerLine, perRun)
	}
	return nil
}
