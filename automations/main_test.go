package automations

import (
	"os"
	"testing"

	"github.com/cairnhq/cairn/internal/reexec"
)

// childEnv, when set, makes the test binary play a child role (see
// runChild in process_test.go) instead of running tests.
const childEnv = "CAIRN_AUTOMATIONS_CHILD"

func TestMain(m *testing.M) {
	reexec.Main(m, childEnv, func(string) int { return runChild(os.Args[1:]) })
}
