package host

import (
	"fmt"
	"regexp"
	"slices"
)

// EnvSettings is the env: section: what a run captures of the launching
// process's environment besides PATH, HOME, LANG and TZ (runs.CaptureEnv).
type EnvSettings struct {
	Pass []string `yaml:"pass"`
}

// maxEnvPass bounds env.pass.
const maxEnvPass = 100

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// check refuses names that are not environment variable names.
func (s EnvSettings) check() error {
	if len(s.Pass) > maxEnvPass {
		return fmt.Errorf("env.pass lists %d names; at most %d", len(s.Pass), maxEnvPass)
	}
	for i, n := range s.Pass {
		if len(n) > 128 || !envVarName.MatchString(n) {
			return fmt.Errorf("env.pass: %q is not an environment variable name (letters, digits and _, not starting with a digit)", n)
		}
		if slices.Contains(s.Pass[:i], n) {
			return fmt.Errorf("env.pass: %s is listed twice", n)
		}
	}
	return nil
}
