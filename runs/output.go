package runs

import (
	"bytes"
	"context"
	"encoding/json"
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

// ReadOutput returns the journal records after p.Cursor. With p.Wait it
// waits (see Follow: an in-process signal, else polling the journal's
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
	limit := pageLimit(p.Limit)
	if p.Wait <= 0 {
		out, _, err := e.readOnce(ctx, id, off, limit)
		return out, err
	}
	recs := []Record{}
	f, err := e.follow(ctx, id, off, FollowParams{
		Until:    UntilOutput,
		Limit:    limit,
		Wait:     p.Wait,
		OnRecord: func(r Record) error { recs = append(recs, r); return nil },
	})
	if f == nil {
		return nil, err
	}
	// Ending ctx ends the wait, not the read: what was read is the answer.
	return &Output{RunID: id, Records: recs, Cursor: strconv.FormatInt(f.cursor, 10), Done: f.done, Status: f.run.Status, OwnerGone: f.ownerGone}, nil
}

// pageLimit is the number of records one read returns at most.
func pageLimit(n int) int {
	if n <= 0 {
		return 1000
	}
	return min(n, 10000)
}

// RemoveJournal deletes run id's journal, once its run is deleted, and
// returns the bytes it held (0 when it had none).
func (e *Engine) RemoveJournal(id string) (int64, error) {
	if err := ids.Validate("run id", id); err != nil {
		return 0, err
	}
	return e.journals.remove(id)
}

// StaleJournals lists the runs whose journal last changed before t: what
// retention checks for journals left without a run.
func (e *Engine) StaleJournals(before time.Time) ([]string, error) { return e.journals.stale(before) }

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
func (e *Engine) readOnce(ctx context.Context, id string, off int64, limit int) (*Output, *store.Run, error) {
	r, err := e.st.GetRun(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var rd io.ReadCloser
	if len(r.Journal) > 0 { // kept with the run
		rd = io.NopCloser(bytes.NewReader(r.Journal[min(off, int64(len(r.Journal))):]))
	} else if rd, err = e.journals.reader(id, off); err != nil {
		return nil, nil, err
	}
	recs, n, err := readRecords(rd, limit)
	rd.Close()
	if err != nil {
		return nil, nil, err
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
		// since it writes the end record before it does, or when the
		// reader is past the end record already (the owner is letting go).
		if held, err := e.locker.isHeld(id); err == nil && (!held || len(recs) == 0 && e.endsBefore(r, id, off)) {
			out.Done = true
		}
	}
	return out, r, nil
}

// endsBefore reports whether the record of run r's journal that ends at
// off is its end record: the last record, at most maxEndResult and some
// text long.
func (e *Engine) endsBefore(r *store.Run, id string, off int64) bool {
	if off <= 0 {
		return false
	}
	start := max(0, off-maxEndResult-64<<10)
	var b []byte
	if len(r.Journal) > 0 {
		b = r.Journal[min(start, int64(len(r.Journal))):min(off, int64(len(r.Journal)))]
	} else {
		rd, err := e.journals.reader(id, start)
		if err != nil {
			return false
		}
		b, err = io.ReadAll(io.LimitReader(rd, off-start))
		rd.Close()
		if err != nil {
			return false
		}
	}
	if int64(len(b)) != off-start || b[len(b)-1] != '\n' {
		return false
	}
	line := b[:len(b)-1]
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	} else if start > 0 {
		return false // longer than an end record
	}
	var rec struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(line, &rec) == nil && rec.Type == RecordEnd
}

// ownerGone returns the pid of run r's owner when it vanished: r is
// running, its lock is free and nobody touched it for a second; 0
// otherwise.
func (e *Engine) ownerGone(ctx context.Context, r *store.Run) int {
	if r.Status != store.RunRunning || r.OwnerPID == 0 || e.now().Sub(r.UpdatedAt) < time.Second {
		return 0
	}
	held, err := e.locker.isHeld(r.ID)
	if err != nil || held {
		return 0
	}
	// The owner may have let go just now: only a run nobody touched since
	// is orphaned.
	again, err := e.st.GetRun(ctx, r.ID)
	if err == nil && again.Revision == r.Revision {
		return r.OwnerPID
	}
	return 0
}
