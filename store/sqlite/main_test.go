package sqlite

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if dbPath := os.Getenv(childEnv); dbPath != "" {
		os.Exit(crashChild(dbPath))
	}
	goleak.VerifyTestMain(m)
}
