package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
)

// DutyState is how a duty is being done, for people (`status`) and for a
// command that leaves work behind and must decide whether to start a
// worker.
type DutyState struct {
	// Locked: the lock file is held, by Lock.
	Locked bool
	Lock   Holder
	// Lease is the duty's lease when it has a holder (current or
	// expired); nil when it never had one or was released.
	Lease *store.Lease
	// Doer is the pid doing the duty: the current lease's holder, else the
	// lock file's; 0 when nobody does it.
	Doer int
	// Stalled names a process that holds the duty without making
	// progress: it let its lease expire, or it is stopped (SIGSTOP,
	// Ctrl-Z). StalledPID is it (0: none); Progress is when it last
	// renewed its lease (zero when unknown).
	StalledPID int
	Progress   time.Time
}

// Done reports whether some process is doing the duty and making progress.
func (s DutyState) Done() bool { return s.Doer != 0 && s.StalledPID != s.Doer }

// DescribeDuty tells who does the duty name (its lock file in dir, its
// lease in leases) at now. It writes nothing.
func DescribeDuty(ctx context.Context, dir, name string, leases store.LeaseStore, now time.Time) (DutyState, error) {
	var st DutyState
	h, held, err := Describe(dir, name)
	if err != nil {
		return st, err
	}
	st.Locked, st.Lock = held, h
	l, err := leases.GetLease(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return st, fmt.Errorf("describe duty %s: %w", name, err)
	case l.Holder != "":
		st.Lease = &l
	}
	switch {
	case st.Lease != nil && st.Lease.Held(now):
		st.Doer = st.Lease.PID
		if held && h.PID != 0 && h.PID != st.Doer {
			// Taken over: the lock file's holder is the stuck one.
			st.StalledPID = h.PID
		} else if Stopped(st.Doer) {
			st.StalledPID, st.Progress = st.Doer, st.Lease.Renewed
		}
	case held && st.Lease != nil:
		// The lease expired under the lock file's holder.
		st.Doer, st.StalledPID, st.Progress = h.PID, h.PID, st.Lease.Renewed
	case held:
		st.Doer = h.PID // a holder of the lock file only
		if Stopped(h.PID) {
			st.StalledPID = h.PID
		}
	}
	return st, nil
}
