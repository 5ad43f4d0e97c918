package automations

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// childEnv, when set, makes the test binary play a child role (see
// runChild in process_test.go) instead of running tests.
const childEnv = "CAIRN_AUTOMATIONS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runChild(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}
