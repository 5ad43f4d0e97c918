package runs

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
)

// The engine's writes carry its clock's time, not the wall clock's: a run
// launched, parked, answered and settled on a fake clock has only fake
// timestamps.
func TestStoreWritesCarryTheEngineClock(t *testing.T) {
	t.Parallel()
	asked := time.Date(2031, 3, 4, 5, 6, 7, 8e6, time.UTC)
	clk := clock.NewFake(asked)
	te := setup(t, map[string]string{"ask.yaml": "steps:\n  - id: greet\n    exec: [\"true\"]\n  - id: q\n    ask: \"Go on?\"\nresult: ${{ steps.q.answer }}\n"},
		func(o *Options) { o.Clock = clk })
	r := te.launch("ask", "")
	parked := te.wait(te.e, r.ID)
	if parked.Status != store.RunWaiting || !parked.CreatedAt.Equal(asked) || !parked.StartedAt.Equal(asked) || !parked.UpdatedAt.Equal(asked) {
		t.Fatalf("parked run at %v: %+v", asked, parked.Run)
	}
	waitIdle(t, te.e)

	answered := asked.Add(time.Hour)
	clk.Set(answered)
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || !done.FinishedAt.Equal(answered) || !done.UpdatedAt.Equal(answered) || !done.CreatedAt.Equal(asked) {
		t.Fatalf("settled run at %v: %+v", answered, done.Run)
	}
	ledger, err := te.st.Ledger(te.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) != 2 {
		t.Fatalf("ledger: %+v", ledger)
	}
	if g := ledger[0]; !g.StartedAt.Equal(asked) || !g.FinishedAt.Equal(asked) {
		t.Fatalf("greet call: %+v", g)
	}
	if q := ledger[1]; !q.FinishedAt.Equal(answered) {
		t.Fatalf("question call: %+v", q)
	}
}
