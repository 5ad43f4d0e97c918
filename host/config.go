package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"

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
	Sessions  SessionSettings   `yaml:"sessions"`
	Retention RetentionSettings `yaml:"retention"`
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
	if err := s.Retention.validate(); err != nil {
		return s, fmt.Errorf("read config %s: %w", p, err)
	}
	return s, nil
}
