package sqlite

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/cairnhq/cairn/internal/stuckwriter"
)

func TestMain(m *testing.M) {
	if dbPath := os.Getenv(childEnv); dbPath != "" {
		os.Exit(crashChild(dbPath))
	}
	if code, ok := stuckwriter.Main(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
