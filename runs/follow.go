package runs

import (
	"context"
	"strconv"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// FollowUntil says when Follow returns.
type FollowUntil int

const (
	// UntilDone: the run settled and its journal was read to the end
	// (every record handed to OnRecord). `run` attached and `runs watch`.
	UntilDone FollowUntil = iota
	// UntilSettledOrParked: the run settled or waits for an answer. A run
	// sleeping durably is not parked for this purpose: the follow goes on.
	// launch_run's wait.
	UntilSettledOrParked
	// UntilOutput: at least one journal record after Cursor arrived, or
	// the run is done. read_run_output's long poll; a subscription calls
	// Follow again from the Cursor it returned.
	UntilOutput
)

// FollowParams say how to follow a run.
type FollowParams struct {
	Until FollowUntil
	// Cursor is where in the journal to start ("" at its beginning): a
	// cursor an earlier Follow or ReadOutput returned.
	Cursor string
	// OnRecord, when set, is called for each journal record after Cursor,
	// in order, as records arrive; an error stops the follow and is
	// returned. With Until UntilSettledOrParked and no OnRecord the
	// journal is not read at all.
	OnRecord func(Record) error
	// Limit is how many records one read of the journal hands over at
	// most (UntilOutput returns after one read); default 1000, at most
	// 10000.
	Limit int
	// Wait bounds the follow: when it passes before Until is met, Follow
	// returns what it has with Reached false and no error. 0 waits until
	// ctx ends.
	Wait time.Duration
	// Resume makes this process execute the run whenever it becomes
	// runnable with its lock free (after an answer, a wake time, or its
	// owner's death): the attached `run` command uses it.
	Resume bool
	// OnOwnerGone is called once per vanished owner (see
	// Output.OwnerGone), checked after a second without news.
	OnOwnerGone func(pid int)
}

// Followed is where a follow ended.
type Followed struct {
	Run     *Run   // the run as last read, with its steps
	Cursor  string // continues after the last record handed to OnRecord
	Reached bool   // Until was met; false when Wait passed first
	// Done: the run settled and the journal was read to its end (only
	// known when the journal was read).
	Done bool
	// OwnerGone is the pid of an owner that vanished, as Output.OwnerGone.
	OwnerGone int
}

// Follow waits on run id until p.Until is met, p.Wait passes or ctx ends
// (the error is then context.Cause(ctx)), handing journal records to
// p.OnRecord as they arrive. It is the one follow loop of the engine: Watch,
// WaitSettledOrParked and ReadOutput's wait are made of it.
//
// It wakes at once when this process changes the run or its journal (the
// engine's change signal) and, for journal files, when any process writes
// to the journal (a step's supervisor appends its output: inotify); it
// polls the run record every 300 ms (every 75 ms when the journal is not
// read), and, where the journal cannot be watched, its size every 75 ms,
// so a run executed by another process is followed without a 1 s poll. It is safe to call from many goroutines at once; each call
// costs one store read per wake.
//
// Run id is validated here, once; a run that does not exist gives
// store.ErrNotFound.
func (e *Engine) Follow(ctx context.Context, id string, p FollowParams) (*Followed, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	off, err := parseCursor(p.Cursor)
	if err != nil {
		return nil, err
	}
	f, err := e.follow(ctx, id, off, p)
	if err != nil {
		return nil, err
	}
	r := f.run
	if p.Until == UntilDone && f.reached && !r.Status.Settled() {
		// The end record was read before the status it follows.
		if r, err = e.st.GetRun(ctx, id); err != nil {
			return nil, err
		}
	}
	v, err := e.view(ctx, r, true)
	if err != nil {
		return nil, err
	}
	return &Followed{Run: v, Cursor: strconv.FormatInt(f.cursor, 10), Reached: f.reached, Done: f.done, OwnerGone: f.ownerGone}, nil
}

// followed is what the follow loop ends with.
type followed struct {
	run       *store.Run
	cursor    int64
	reached   bool
	done      bool
	ownerGone int
}

// Polling periods of followers; changes made in this process wake them
// at once.
const (
	pollJournal = 75 * time.Millisecond
	pollStore   = 4 // journal polls per store poll
)

// ownerCheckAfter is how long a follow goes without news before it asks
// whether the run's owner vanished.
const ownerCheckAfter = time.Second

// follow is Follow from journal offset off, for a validated id. On an
// error from ctx it also returns what it had.
func (e *Engine) follow(ctx context.Context, id string, off int64, p FollowParams) (*followed, error) {
	limit := pageLimit(p.Limit)
	reading := p.OnRecord != nil || p.Until != UntilSettledOrParked
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := e.clk.NewTimer(p.Wait)
		defer t.Stop()
		deadline = t.C()
	}
	// Writes to the journal by any process wake the follow when the
	// journals can tell (files: inotify); the store is then polled alone.
	var grew <-chan struct{}
	period := pollJournal
	if jw, ok := e.journals.(journalWatcher); ok && reading {
		if c, stop, err := jw.watch(id); err == nil {
			defer stop()
			grew, period = c, pollJournal*pollStore
		}
	}
	poll := e.clk.NewTimer(period)
	defer poll.Stop()
	f := &followed{cursor: off}
	lastNews, reported := e.now(), 0
	for n := 0; ; {
		changed := e.changes()
		got := 0
		if reading {
			out, r, err := e.readOnce(ctx, id, f.cursor, limit)
			if err != nil {
				return nil, err
			}
			f.run, f.done = r, out.Done
			for _, rec := range out.Records {
				if p.OnRecord != nil {
					if err := p.OnRecord(rec); err != nil {
						return nil, err
					}
				}
			}
			got = len(out.Records)
			f.cursor, _ = strconv.ParseInt(out.Cursor, 10, 64)
		} else {
			r, err := e.st.GetRun(ctx, id)
			if err != nil {
				return nil, err
			}
			f.run = r
		}
		switch p.Until {
		case UntilDone:
			f.reached = f.done
		case UntilSettledOrParked:
			f.reached = f.run.Status.Settled() || f.run.Status == store.RunWaiting && f.run.Question != nil
		case UntilOutput:
			f.reached = got > 0 || f.done
		}
		if f.reached {
			return f, nil
		}
		if got > 0 {
			lastNews = e.now()
		}
		if p.Resume && f.run.Runnable(e.now()) {
			if _, err := e.resume(ctx, id); err != nil {
				return nil, err
			}
		}
		if got == limit {
			continue // more is there already
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return f, context.Cause(ctx)
			case <-deadline:
				f.ownerGone = e.ownerGone(ctx, f.run)
				return f, nil
			case <-changed:
				waiting = false
			case <-grew:
				waiting = false
			case <-poll.C():
				poll.Reset(period)
				n++
				if !reading || grew != nil || n%pollStore == 0 {
					waiting = false
				} else if size, err := e.journals.size(id); err != nil || size > f.cursor {
					waiting = false
				}
				if p.OnOwnerGone != nil && e.now().Sub(lastNews) >= ownerCheckAfter {
					lastNews = e.now()
					if pid := e.ownerGone(ctx, f.run); pid != 0 && pid != reported {
						reported = pid
						p.OnOwnerGone(pid)
					}
				}
			}
		}
	}
}

// WatchParams follow a run.
type WatchParams struct {
	Cursor string
	// Resume: see FollowParams.Resume.
	Resume bool
	// OnRecord is called for each journal record in order; an error stops
	// the watch and is returned.
	OnRecord func(Record) error
	// OnOwnerGone is called once per vanished owner.
	OnOwnerGone func(pid int)
}

// Watch follows run id's journal until the run is done, and returns the
// settled run: Follow with UntilDone.
func (e *Engine) Watch(ctx context.Context, id string, p WatchParams) (*Run, error) {
	f, err := e.Follow(ctx, id, FollowParams{Until: UntilDone, Cursor: p.Cursor, Resume: p.Resume, OnRecord: p.OnRecord, OnOwnerGone: p.OnOwnerGone})
	if err != nil {
		return nil, err
	}
	return f.Run, nil
}

// WaitSettledOrParked waits until run id is settled or waits for an
// answer, and returns it: Follow with UntilSettledOrParked.
func (e *Engine) WaitSettledOrParked(ctx context.Context, id string) (*Run, error) {
	f, err := e.Follow(ctx, id, FollowParams{Until: UntilSettledOrParked})
	if err != nil {
		return nil, err
	}
	return f.Run, nil
}
