package sessions

import (
	"context"
	"errors"
	"testing"

	"github.com/cairnhq/cairn/store"
)

type codedError int

func (e codedError) Error() string { return "sqlite error" }
func (e codedError) Code() int     { return int(e) }

func TestRetryBusyRetriesOnlyWhatDidNotHappen(t *testing.T) {
	t.Parallel()
	busy := &store.CommitError{OpID: "op", Outcome: store.NotCommitted, Err: codedError(5)}
	cases := []struct {
		name  string
		err   error
		tries int // attempts when every attempt but the fourth fails with err
	}{
		{"busy, not committed", busy, 4},
		{"busy snapshot (extended code)", &store.CommitError{Outcome: store.NotCommitted, Err: codedError(517)}, 4},
		{"locked", &store.CommitError{Outcome: store.NotCommitted, Err: codedError(6)}, 4},
		{"unknown outcome", &store.CommitError{Outcome: store.Unknown, Err: codedError(5)}, 1},
		{"constraint", &store.CommitError{Outcome: store.NotCommitted, Err: codedError(19)}, 1},
		{"plain error", errors.New("boom"), 1},
	}
	for _, c := range cases {
		tries := 0
		err := retryBusy(context.Background(), func() error {
			tries++
			if tries == 4 {
				return nil
			}
			return c.err
		})
		if tries != c.tries || (c.tries == 4) != (err == nil) {
			t.Errorf("%s: %d tries, err %v; want %d tries", c.name, tries, err, c.tries)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tries := 0
	if err := retryBusy(ctx, func() error { tries++; return busy }); !errors.Is(err, busy) || tries != 1 {
		t.Fatalf("cancelled: %d tries, %v", tries, err)
	}
}
