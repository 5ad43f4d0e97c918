package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/cairnhq/cairn/store"
)

func testLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_l"})
	if l, err := s.Ledger(ctx, r.ID); err != nil || len(l) != 0 {
		t.Fatalf("empty ledger: %v %v", l, err)
	}
	if _, err := s.Ledger(ctx, "run_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ledger of a missing run: %v", err)
	}
	var se *store.RunStateError
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "exec"}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("start on an unclaimed run: %v, want ErrNotOwner", err)
	}
	before := mustClaim(t, s, r.ID, "c")
	e, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "sleep", PID: 7, Detail: json.RawMessage(`{"until":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if e.State != store.StepStarted || e.Starts != 1 || e.Seq != 1 || e.OwnerPID != 7 || string(e.Detail) != `{"until":1}` || e.StartedAt.IsZero() {
		t.Fatalf("started entry: %+v", e)
	}
	if got, _ := s.GetRun(ctx, r.ID); got.Revision <= before.Revision {
		t.Fatalf("a ledger write did not move the run's revision (%d -> %d)", before.Revision, got.Revision)
	}
	// Starting again (a re-run after a crash) counts the start.
	e, err = s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "sleep", Detail: json.RawMessage(`{"until":1}`)})
	if err != nil || e.Starts != 2 || e.Seq != 1 {
		t.Fatalf("restart: %+v %v", e, err)
	}
	e, err = s.FinishStep(ctx, store.StepFinish{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 1, Status: "succeeded", Result: json.RawMessage(`{"ok":true}`)})
	if err != nil || e.State != store.StepFinished || e.Status != "succeeded" || string(e.Result) != `{"ok":true}` || !e.FinishedAt.Equal(tNow) || e.Kind != "sleep" {
		t.Fatalf("finished entry: %+v %v", e, err)
	}
	if _, err := s.FinishStep(ctx, store.StepFinish{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 1, Status: "failed"}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("finishing a finished call again: %v, want ErrExists", err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 1, Kind: "sleep"}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("starting a finished call again: %v, want ErrExists", err)
	}
	// A call that never started (a skipped step) is recorded by its finish.
	e, err = s.FinishStep(ctx, store.StepFinish{Now: tNow, RunID: r.ID, Claim: "c", Path: "b", Position: 1, Kind: "exec", Status: "skipped"})
	if err != nil || e.Seq != 2 || e.Kind != "exec" || e.Starts != 0 {
		t.Fatalf("finish without start: %+v %v", e, err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 2, Kind: "sleep"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "", Position: 1, Kind: "exec"}); err == nil {
		t.Fatal("an empty step path was accepted")
	}
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "x", Position: 0, Kind: "exec"}); err == nil {
		t.Fatal("position 0 was accepted")
	}
	l, err := s.Ledger(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range l {
		got = append(got, fmt.Sprintf("%s/%d:%s", e.Path, e.Position, e.State))
	}
	if fmt.Sprint(got) != "[a/1:finished b/1:finished a/2:started]" {
		t.Fatalf("ledger = %v", got)
	}
	// Callers never share memory with the store.
	l[0].Result[0] = 'X'
	if l2, _ := s.Ledger(ctx, r.ID); string(l2[0].Result) != `{"ok":true}` {
		t.Fatalf("changing a returned entry changed the store: %s", l2[0].Result)
	}
	// Only a running run's ledger is written.
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: r.ID, Claim: "c", Status: store.RunFailed}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishStep(ctx, store.StepFinish{Now: tNow, RunID: r.ID, Claim: "c", Path: "a", Position: 2, Status: "failed"}); !errors.Is(err, store.ErrNotOwner) && !errors.As(err, &se) {
		t.Fatalf("ledger write on a settled run: %v", err)
	}
}

func testSettleLedger(t *testing.T, s store.Store) {
	ctx := context.Background()
	r := mustCreate(t, s, &store.Run{ID: "run_l"})
	mustClaim(t, s, r.ID, "c")
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: r.ID, Claim: "c", Path: "first", Position: 1, Kind: "exec", PID: 7}); err != nil {
		t.Fatal(err)
	}
	journal := []byte(`{"type":"start"}` + "\n" + `{"type":"end"}` + "\n")
	done, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: r.ID, Claim: "c", Status: store.RunSucceeded, Journal: journal, Ledger: []store.StepFinish{
		{Path: "first", Position: 1, Status: "succeeded", Result: json.RawMessage(`{"stdout":"x"}`)},
		{Path: "skipped", Position: 1, Kind: "exec", Status: "skipped"},
	}})
	if err != nil || done.Status != store.RunSucceeded || done.Revision != 4 {
		t.Fatalf("settle with ledger: %+v %v", done, err)
	}
	led, err := s.Ledger(ctx, r.ID)
	if err != nil || len(led) != 2 {
		t.Fatalf("ledger: %+v %v", led, err)
	}
	if e := led[0]; e.Path != "first" || e.State != store.StepFinished || e.Status != "succeeded" || string(e.Result) != `{"stdout":"x"}` || e.Starts != 1 || e.Seq != 1 {
		t.Fatalf("finished call: %+v", e)
	}
	if e := led[1]; e.Path != "skipped" || e.State != store.StepFinished || e.Status != "skipped" || e.Kind != "exec" || e.Starts != 0 || e.Seq != 2 || e.RunID != r.ID {
		t.Fatalf("skipped call: %+v", e)
	}
	// The journal is kept with the run; only GetRun returns it.
	if got, err := s.GetRun(ctx, r.ID); err != nil || string(got.Journal) != string(journal) {
		t.Fatalf("GetRun journal %q, %v; want %q", got.Journal, err, journal)
	}
	if list, _, err := s.ListRuns(ctx, store.RunFilter{}); err != nil || len(list) != 1 || list[0].Journal != nil {
		t.Fatalf("ListRuns: %+v %v", list, err)
	}

	// Outcomes ride with a start too, and a refused one refuses it.
	g := mustCreate(t, s, &store.Run{ID: "run_g"})
	mustClaim(t, s, g.ID, "c")
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: g.ID, Claim: "c", Path: "one", Position: 1, Kind: "exec"}); err != nil {
		t.Fatal(err)
	}
	two, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: g.ID, Claim: "c", Path: "two", Position: 1, Kind: "shell", PID: 9, Ledger: []store.StepFinish{
		{Path: "one", Position: 1, Status: "succeeded", Result: json.RawMessage(`{"stdout":"1"}`)},
		{Path: "skip", Position: 1, Kind: "exec", Status: "skipped"},
	}})
	if err != nil || two.State != store.StepStarted || two.Seq != 3 || two.Starts != 1 {
		t.Fatalf("start with outcomes: %+v %v", two, err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: g.ID, Claim: "c", Path: "three", Position: 1, Kind: "exec", Ledger: []store.StepFinish{
		{Path: "x", Position: 1, Status: "skipped"}, {Path: "x", Position: 1, Status: "skipped"},
	}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("start with an outcome twice: %v, want ErrExists", err)
	}
	if _, err := s.StartStep(ctx, store.StepStart{Now: tNow, RunID: g.ID, Claim: "c", Path: "four", Position: 1, Kind: "exec", Ledger: []store.StepFinish{
		{Path: "four", Position: 1, Status: "skipped"},
	}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("start of a call finished in the same operation: %v, want ErrExists", err)
	}
	led, _ = s.Ledger(ctx, g.ID)
	if len(led) != 3 || led[0].Path != "one" || led[0].State != store.StepFinished || string(led[0].Result) != `{"stdout":"1"}` || led[1].Path != "skip" || led[2].Path != "two" {
		t.Fatalf("ledger after starts with outcomes: %+v", led)
	}

	// A refused outcome refuses the settle: nothing is written.
	f := mustCreate(t, s, &store.Run{ID: "run_m"})
	mustClaim(t, s, f.ID, "c")
	if _, err := s.FinishStep(ctx, store.StepFinish{Now: tNow, RunID: f.ID, Claim: "c", Path: "done", Position: 1, Kind: "exec", Status: "succeeded"}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]store.StepFinish{
		{{Path: "new", Position: 1, Status: "skipped"}, {Path: "done", Position: 1, Status: "failed"}},
		{{Path: "twice", Position: 1, Status: "skipped"}, {Path: "twice", Position: 1, Status: "skipped"}},
	} {
		if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: f.ID, Claim: "c", Status: store.RunFailed, Ledger: bad}); !errors.Is(err, store.ErrExists) {
			t.Fatalf("settle with a recorded outcome again: %v, want ErrExists", err)
		}
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: f.ID, Claim: "c", Status: store.RunFailed, Ledger: []store.StepFinish{{Path: "", Position: 1}}}); err == nil {
		t.Fatal("settle with a bad call was accepted")
	}
	got, _ := s.GetRun(ctx, f.ID)
	led, _ = s.Ledger(ctx, f.ID)
	if got.Status != store.RunRunning || got.Claim != "c" || len(led) != 1 {
		t.Fatalf("a refused settle wrote: %+v, ledger %+v", got, led)
	}
	if _, err := s.SettleRun(ctx, store.SettleParams{Now: tNow, ID: f.ID, Claim: "other", Status: store.RunFailed, Ledger: []store.StepFinish{{Path: "x", Position: 1, Status: "skipped"}}}); !errors.Is(err, store.ErrNotOwner) {
		t.Fatalf("settle by a non-owner: %v, want ErrNotOwner", err)
	}
}
