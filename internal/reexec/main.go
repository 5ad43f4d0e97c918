package reexec

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main is the TestMain of a package whose test binary doubles as the child
// processes of its tests: with the environment variable env set (Start's
// Params.Env names it), the binary plays that role and exits with
// child(role), role being env's value; otherwise it runs the tests and
// fails them if any leaks a goroutine.
func Main(m *testing.M, env string, child func(role string) int) {
	if role := os.Getenv(env); role != "" {
		os.Exit(child(role))
	}
	goleak.VerifyTestMain(m)
}

// SoakEnv, when set (CI sets it), makes the long randomized loops of
// multi-process tests (random kills) run their soak count instead.
const SoakEnv = "CAIRN_SOAK"

// Soak returns how many rounds a randomized loop runs: n, or soak when
// SoakEnv is set.
func Soak(n, soak int) int {
	if os.Getenv(SoakEnv) != "" {
		return soak
	}
	return n
}
