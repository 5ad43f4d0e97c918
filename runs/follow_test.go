package runs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Follow returns at the condition asked for, hands over every record
// once, and a bounded wait ends without an error.
func TestFollow(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	ctx, cancel := context.WithTimeout(te.ctx, 60*time.Second)
	defer cancel()
	id := te.launch("hello", "").ID

	var seen []Record
	parked, err := te.e.Follow(ctx, id, FollowParams{Until: UntilSettledOrParked, OnRecord: func(r Record) error {
		seen = append(seen, r)
		return nil
	}})
	if err != nil || !parked.Reached || parked.Run.Status != store.RunWaiting || parked.Run.Question == nil {
		t.Fatalf("parked: %+v %v", parked, err)
	}

	// Nothing more comes while it waits: the bounded wait ends quietly.
	quiet, err := te.e.Follow(ctx, id, FollowParams{Until: UntilOutput, Cursor: parked.Cursor, Wait: 20 * time.Millisecond})
	if err != nil || quiet.Reached || quiet.Cursor != parked.Cursor {
		t.Fatalf("quiet follow: %+v %v", quiet, err)
	}

	// An answer made in this process wakes a follower at once.
	go func() {
		if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: id, Answer: "no"}); err != nil {
			t.Error(err)
		}
	}()
	next, err := te.e.Follow(ctx, id, FollowParams{Until: UntilOutput, Cursor: parked.Cursor, OnRecord: func(r Record) error {
		seen = append(seen, r)
		return nil
	}})
	if err != nil || !next.Reached || next.Cursor == parked.Cursor {
		t.Fatalf("after the answer: %+v %v", next, err)
	}
	if _, err := te.e.Resume(te.ctx, id); err != nil {
		t.Fatal(err)
	}
	done, err := te.e.Follow(ctx, id, FollowParams{Until: UntilDone, Cursor: next.Cursor, OnRecord: func(r Record) error {
		seen = append(seen, r)
		return nil
	}})
	if err != nil || !done.Reached || !done.Done || done.Run.Status != store.RunSucceeded || len(done.Run.Steps) != 4 {
		t.Fatalf("done: %+v %v", done, err)
	}
	all := te.records(te.e, id)
	if len(seen) != len(all) || seen[0].Type != RecordStart || seen[len(seen)-1].Type != RecordEnd {
		t.Fatalf("followed %d records, the journal has %d", len(seen), len(all))
	}
}

func TestFollowRefusesBadArguments(t *testing.T) {
	t.Parallel()
	te := setup(t, nil)
	var invalid *ids.InvalidError
	if _, err := te.e.Follow(te.ctx, "../x", FollowParams{}); !errors.As(err, &invalid) {
		t.Fatalf("invalid id: %v", err)
	}
	if _, err := te.e.Follow(te.ctx, "run_x", FollowParams{Cursor: "-1"}); err == nil {
		t.Fatal("a negative cursor was accepted")
	}
	if _, err := te.e.Follow(te.ctx, "run_nope", FollowParams{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
}

// A follow ends with its context, with the context's cause.
func TestFollowEndsWithItsContext(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	id := te.launch("hello", "").ID
	te.wait(te.e, id)
	cause := errors.New("enough")
	ctx, cancel := context.WithCancelCause(te.ctx)
	cancel(cause)
	if _, err := te.e.Follow(ctx, id, FollowParams{Until: UntilDone}); !errors.Is(err, cause) && !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow after its context ended: %v", err)
	}
}

// TestReadPastTheEndIsDone: a reader already past the end record is done
// even while the owner still holds the run (it lets go just after).
func TestReadPastTheEndIsDone(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"one.yaml": "steps:\n  - id: say\n    exec: [echo, hi]\n"})
	id := te.launch("one", "").ID
	if r := te.wait(te.e, id); r.Status != store.RunSucceeded {
		t.Fatalf("run: %s", r.Status)
	}
	waitIdle(t, te.e)
	all, err := te.e.ReadOutput(te.ctx, id, ReadParams{Limit: 10000})
	if err != nil || !all.Done || all.Records[len(all.Records)-1].Type != RecordEnd {
		t.Fatalf("whole journal: %+v %v", all, err)
	}
	lock, err := te.e.locker.tryLock(id) // as the owner does until it lets go
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	again, err := te.e.ReadOutput(te.ctx, id, ReadParams{Cursor: all.Cursor})
	if err != nil || len(again.Records) != 0 || !again.Done {
		t.Fatalf("read past the end while the run is held: %+v %v", again, err)
	}
	before, err := te.e.ReadOutput(te.ctx, id, ReadParams{Limit: 1})
	if err != nil || before.Done {
		t.Fatalf("read of the first record while the run is held: %+v %v", before, err)
	}
}
