package sessions

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/cairnhq/cairn/store"
)

// busyRetryFor bounds how long a write keeps retrying while other
// processes hold the database (each attempt already waits the store's own
// busy timeout).
const busyRetryFor = time.Minute

// retryBusy runs write, and runs it again while it fails because another
// process held the database's write lock: such a failure is NotCommitted,
// so nothing of it happened and trying again is safe. SQLite's busy wait
// is not fair (a process that writes in a tight loop can starve a
// sleeping waiter past the busy timeout); a fresh attempt restarts its
// backoff. Any other error, an Unknown outcome above all, is returned at
// once.
func retryBusy(ctx context.Context, write func() error) error {
	deadline := time.Now().Add(busyRetryFor)
	for {
		err := write()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(time.Duration(rand.N(20)+1) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// isBusy reports a write refused, before anything was applied, because
// the database was locked (SQLITE_BUSY or SQLITE_LOCKED, found through the
// driver error's Code method so this package needs no driver).
func isBusy(err error) bool {
	var ce *store.CommitError
	if !errors.As(err, &ce) || ce.Outcome != store.NotCommitted {
		return false
	}
	var coded interface{ Code() int }
	if !errors.As(ce.Err, &coded) {
		return false
	}
	code := coded.Code() & 0xff // primary result code
	return code == 5 || code == 6
}
