package runs

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// ReadParams page through a run's journal.
type ReadParams struct {
	Cursor string // from a previous read; "" starts at the beginning
	Limit  int    // records at most; default 1000, at most 10000
	// Wait, when positive, waits up to this long for a record to arrive
	// when there is none after the cursor (and the run is not done).
	Wait time.Duration
}

// Output is a page of a run's journal.
type Output struct {
	RunID   string   `json:"run_id"`
	Records []Record `json:"records"`
	// Cursor continues after the last record returned (an incomplete last
	// line is not consumed).
	Cursor string `json:"cursor"`
	// Done: the run settled and there is nothing more to read.
	Done   bool            `json:"done"`
	Status store.RunStatus `json:"status"`
	// OwnerGone is the pid of an owner that vanished without an ending:
	// the run is running, its lock is free, and nothing changed it since.
	// A live peer adopts it within its AdoptEvery (100ms by default); the
	// journal then says "resumed by pid N; previous owner pid M is gone".
	OwnerGone int `json:"owner_gone,omitempty"`
}

// Polling periods of waiters; changes made in this process wake them at
// once.
const (
	pollJournal = 75 * time.Millisecond
	pollStore   = 4 // journal polls per store poll
)

// ReadOutput returns the journal records after p.Cursor. With p.Wait it
// waits (efficiently: an in-process signal, else polling the journal's
// size every 75 ms) until at least one record arrives, the run is done,
// the wait passes or ctx ends.
func (e *Engine) ReadOutput(ctx context.Context, id string, p ReadParams) (*Output, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	off, err := parseCursor(p.Cursor)
	if err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	limit = min(limit, 10000)
	var deadline <-chan time.Time
	if p.Wait > 0 {
		t := time.NewTimer(p.Wait)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(pollJournal)
	defer tick.Stop()
	for n := 0; ; n++ {
		changed := e.changes()
		out, err := e.readOnce(ctx, id, off, limit)
		if err != nil {
			return nil, err
		}
		if len(out.Records) > 0 || out.Done || p.Wait <= 0 {
			return out, nil
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return out, nil
			case <-deadline:
				return e.withOwnerCheck(ctx, out)
			case <-changed:
				waiting = false
			case <-tick.C:
				n++
				if size, err := e.journals.size(id); err != nil || size > off || n%pollStore == 0 {
					waiting = false
				}
			}
		}
	}
}

// OutputSize returns the length of run id's journal, which is the cursor
// at its end: a follower that polls compares it to notice new output. A
// journal kept with the run (see the package doc) is counted too; 0 when
// the run has no output yet.
func (e *Engine) OutputSize(ctx context.Context, id string) (int64, error) {
	if err := ids.Validate("run id", id); err != nil {
		return 0, err
	}
	n, err := e.journals.size(id)
	if err != nil || n > 0 || !e.inlineJournals {
		return n, err
	}
	r, err := e.st.GetRun(ctx, id)
	if err != nil {
		return 0, err
	}
	return int64(len(r.Journal)), nil
}

// readOnce reads what is there now. The run's status is read before the
// journal, so a settled status means every record written before the
// settle is in what follows.
func (e *Engine) readOnce(ctx context.Context, id string, off int64, limit int) (*Output, error) {
	r, err := e.st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	var rd io.ReadCloser
	if len(r.Journal) > 0 { // kept with the run
		rd = io.NopCloser(bytes.NewReader(r.Journal[min(off, int64(len(r.Journal))):]))
	} else if rd, err = e.journals.reader(id, off); err != nil {
		return nil, err
	}
	recs, n, err := readRecords(rd, limit)
	rd.Close()
	if err != nil {
		return nil, err
	}
	out := &Output{RunID: id, Records: recs, Cursor: strconv.FormatInt(off+n, 10), Status: r.Status}
	if out.Records == nil {
		out.Records = []Record{}
	}
	for _, rec := range recs {
		if rec.Type == RecordEnd {
			out.Done = true
		}
	}
	if !out.Done && r.Status.Settled() && len(recs) < limit {
		// No end record (yet): done once the owner let go of the run,
		// since it writes the end record before it does.
		if held, err := e.locker.isHeld(id); err == nil && !held {
			out.Done = true
		}
	}
	return out, nil
}

// withOwnerCheck sets OwnerGone when a running run's owner vanished.
func (e *Engine) withOwnerCheck(ctx context.Context, out *Output) (*Output, error) {
	r, err := e.st.GetRun(ctx, out.RunID)
	if err != nil {
		return out, nil
	}
	if r.Status != store.RunRunning || r.OwnerPID == 0 || e.now().Sub(r.UpdatedAt) < time.Second {
		return out, nil
	}
	held, err := e.locker.isHeld(r.ID)
	if err != nil || held {
		return out, nil
	}
	// The owner may have let go just now: only a run nobody touched since
	// is orphaned.
	again, err := e.st.GetRun(ctx, out.RunID)
	if err == nil && again.Revision == r.Revision {
		out.OwnerGone = r.OwnerPID
	}
	return out, nil
}

// WatchParams follow a run.
type WatchParams struct {
	Cursor string
	// Resume makes this process execute the run whenever it becomes
	// runnable with its lock free (after an answer, a wake time, or its
	// owner's death): the attached `run` command uses it.
	Resume bool
	// OnRecord is called for each journal record in order; an error stops
	// the watch and is returned.
	OnRecord func(Record) error
	// OnOwnerGone is called once per vanished owner.
	OnOwnerGone func(pid int)
}

// Watch follows run id's journal until the run is done, and returns the
// settled run.
func (e *Engine) Watch(ctx context.Context, id string, p WatchParams) (*Run, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	cursor, gone := p.Cursor, 0
	for {
		if p.Resume {
			if r, err := e.st.GetRun(ctx, id); err == nil && r.Runnable(e.now()) {
				if _, err := e.Resume(ctx, id); err != nil {
					return nil, err
				}
			}
		}
		out, err := e.ReadOutput(ctx, id, ReadParams{Cursor: cursor, Wait: time.Second})
		if err != nil {
			return nil, err
		}
		for _, rec := range out.Records {
			if p.OnRecord != nil {
				if err := p.OnRecord(rec); err != nil {
					return nil, err
				}
			}
		}
		cursor = out.Cursor
		if out.OwnerGone != 0 && out.OwnerGone != gone {
			gone = out.OwnerGone
			if p.OnOwnerGone != nil {
				p.OnOwnerGone(gone)
			}
		}
		if out.Done {
			return e.Get(ctx, id)
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
	}
}

// WaitSettledOrParked waits until run id is settled or waits for an
// answer, and returns it. A run sleeping durably is not parked for this
// purpose: the wait goes on.
func (e *Engine) WaitSettledOrParked(ctx context.Context, id string) (*Run, error) {
	if err := ids.Validate("run id", id); err != nil {
		return nil, err
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		changed := e.changes()
		r, err := e.st.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.Status.Settled() || r.Status == store.RunWaiting && r.Question != nil {
			return e.view(ctx, r, true)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-changed:
		case <-tick.C:
		}
	}
}
