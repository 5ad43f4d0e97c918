package runs

import (
	"fmt"

	"github.com/cairnhq/cairn/workflows"
)

// MaxInputBytes caps a launch input: bytes of its JSON, as given and as
// stored with defaults filled. An input lives in the run's row and in
// every reply that shows the run, so large data belongs in a file the
// workflow reads, not in the input.
const MaxInputBytes = 256 << 10

// checkInputSize refuses an input over MaxInputBytes with an
// *workflows.InputError saying what to do.
func checkInputSize(n int) error {
	if n <= MaxInputBytes {
		return nil
	}
	return &workflows.InputError{Problems: []string{fmt.Sprintf(
		"is %d bytes of JSON, over the cap of %d (256 KiB): pass large data as a file path in the input and let a step read the file", n, MaxInputBytes)}}
}
