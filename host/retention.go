package host

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cairnhq/cairn/retention"
)

// RetentionSettings is the retention: section. Unset keys take the
// defaults of package retention.
type RetentionSettings struct {
	// MaxAge: settled runs that finished longer ago are deleted ("30d",
	// "12h"; "0" keeps every run).
	MaxAge *Duration `yaml:"max_age"`
	// KeepPerTarget and KeepPerAutomation: the newest runs of each target
	// and of each automation kept whatever their age.
	KeepPerTarget     *int `yaml:"keep_per_target"`
	KeepPerAutomation *int `yaml:"keep_per_automation"`
	// Interval is how often a started host collects ("0": never; run
	// mcp-host gc by hand).
	Interval *Duration `yaml:"interval"`
}

// Duration is a YAML duration: Go's syntax ("90m", "1h30m") or a whole
// number of days ("30d").
type Duration time.Duration

// UnmarshalYAML reads a Duration from a scalar.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration (30d, 12h)", n.Line)
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ParseDuration reads "30d", "0" or any time.ParseDuration text.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("duration %q: use a whole number of days (30d) or Go's syntax (12h, 90m)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("duration %q: use a whole number of days (30d) or Go's syntax (12h, 90m)", s)
	}
	return v, nil
}

// minInterval keeps a misconfigured host from collecting in a tight loop.
const minInterval = time.Minute

// validate checks the section; the error names the key.
func (r RetentionSettings) validate() error {
	for _, k := range []struct {
		key string
		n   *int
		min int
	}{{"keep_per_target", r.KeepPerTarget, 0}, {"keep_per_automation", r.KeepPerAutomation, 1}} {
		if k.n != nil && *k.n < k.min {
			return fmt.Errorf("retention.%s is %d; use %d or more", k.key, *k.n, k.min)
		}
	}
	if r.Interval != nil && *r.Interval != 0 && time.Duration(*r.Interval) < minInterval {
		return fmt.Errorf("retention.interval is %v; use 0 (never) or at least %v", time.Duration(*r.Interval), minInterval)
	}
	return nil
}

// Policy is the retention policy these settings describe.
func (r RetentionSettings) Policy() retention.Policy {
	p := retention.DefaultPolicy()
	if r.MaxAge != nil {
		p.MaxAge = time.Duration(*r.MaxAge)
	}
	if r.KeepPerTarget != nil {
		p.KeepPerTarget = *r.KeepPerTarget
	}
	if r.KeepPerAutomation != nil {
		p.KeepPerAutomation = *r.KeepPerAutomation
	}
	return p
}

// GCInterval is how often a started host collects; 0: never.
func (r RetentionSettings) GCInterval() time.Duration {
	if r.Interval == nil {
		return retention.DefaultInterval
	}
	return time.Duration(*r.Interval)
}
