package runs

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// A run's lock is held by the process executing it, in the lock table
// locks/runs, and free the instant that process is SIGKILLed.
func TestRunLockFreeWhenOwnerKilled(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"long.yaml": "steps:\n  - id: nap\n    exec: [\"sleep\", \"60\"]\n"})
	cmd, stderr, id := te.launchChild("launch", "long", "")
	step := waitStepStarted(t, te, te.e, id, "nap")
	t.Cleanup(func() { _ = syscall.Kill(-step, syscall.SIGKILL) }) // the step outlives its killed owner

	if held, err := te.e.locker.isHeld(id); err != nil || !held {
		t.Fatalf("the run's lock is not held while its owner executes it: %v %v", held, err)
	}
	if _, err := te.e.locker.tryLock(id); !errors.Is(err, locks.ErrHeld) {
		t.Fatalf("took the lock of a run another process executes: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); !isKilled(err) {
		t.Fatalf("child: %v\n%s", err, stderr)
	}
	if held, err := te.e.locker.isHeld(id); err != nil || held {
		t.Fatalf("the lock of a run whose owner was killed is still held: %v %v", held, err)
	}
	lock, err := te.e.locker.tryLock(id)
	if err != nil {
		t.Fatalf("lock of a run whose owner was killed: %v", err)
	}
	lock.Unlock()
	if names := dirNames(t, te.ws.LocksDir()); !slices.Equal(names, []string{"runs"}) {
		t.Fatalf("locks/ holds %v, want only the run lock table", names)
	}
}

// Runs that start no process write no file: no lock file, no journal
// file (the journal is kept with the run), and two store writes each; a
// run that starts a process writes its journal file. Every journal reads
// the same either way.
func TestNoFilePerRun(t *testing.T) {
	t.Parallel()
	te := setup(t, testdata(t, "noop.yaml", "echo.yaml"))
	if err := te.e.Start(te.ctx); err != nil { // the peer loop runs too
		t.Fatal(err)
	}
	ops := func() int {
		var n int
		if err := te.st.(*sqlite.Store).Reader().QueryRowContext(te.ctx, "SELECT count(*) FROM operations").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := ops()
	const n = 20
	var ids []string
	for range n {
		r := te.wait(te.e, te.launch("noop", "").ID)
		if r.Status != store.RunSucceeded || string(r.Result) != `"skipped"` || stepStatuses(r) != "nothing=skipped" {
			t.Fatalf("noop run: %s %s %s", r.Status, r.Result, stepStatuses(r))
		}
		ids = append(ids, r.ID)
	}
	waitIdle(t, te.e)
	if got := ops() - before; got != 2*n {
		t.Fatalf("%d noop runs took %d store writes, want %d", n, got, 2*n)
	}
	if names := dirNames(t, te.ws.OutputDir()); len(names) != 0 {
		t.Fatalf("noop runs left journal files: %v", names)
	}
	for _, id := range ids {
		out, err := te.e.ReadOutput(te.ctx, id, ReadParams{})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, rec := range out.Records {
			types = append(types, rec.Type+"/"+rec.Event)
		}
		if !out.Done || strings.Join(types, " ") != "start/ step/skipped end/" || out.Records[0].Run != id || out.Records[2].Status != "succeeded" {
			t.Fatalf("journal of %s: done %v, %v", id, out.Done, out.Records)
		}
		// Paging through it gives the same records, and its size is the
		// cursor at its end.
		page, err := te.e.ReadOutput(te.ctx, id, ReadParams{Limit: 1})
		if err != nil || len(page.Records) != 1 || page.Done {
			t.Fatalf("first page: %+v %v", page, err)
		}
		rest, err := te.e.ReadOutput(te.ctx, id, ReadParams{Cursor: page.Cursor})
		if err != nil || len(rest.Records) != 2 || !rest.Done || rest.Cursor != out.Cursor {
			t.Fatalf("rest: %+v %v", rest, err)
		}
		if size, err := te.e.OutputSize(te.ctx, id); err != nil || out.Cursor != strconv.FormatInt(size, 10) {
			t.Fatalf("OutputSize = %d, %v; cursor at the end %s", size, err, out.Cursor)
		}
	}

	r := te.wait(te.e, te.launch("echo", "").ID)
	waitIdle(t, te.e) // the run's step file goes once its end is written
	if names := dirNames(t, te.ws.OutputDir()); !slices.Equal(names, []string{r.ID + ".jsonl"}) {
		t.Fatalf("output/ holds %v, want the journal of the run that started a process", names)
	}
	var text []string
	for _, rec := range te.records(te.e, r.ID) {
		if rec.Type == RecordText {
			text = append(text, rec.Text)
		}
	}
	if r.Status != store.RunSucceeded || !slices.Equal(text, []string{"hi"}) {
		t.Fatalf("echo run: %s, text %v", r.Status, text)
	}
	if names := dirNames(t, te.ws.LocksDir()); !slices.Equal(names, []string{"runs"}) {
		t.Fatalf("locks/ holds %v, want only the run lock table", names)
	}
}

// An engine notices the runs other engines (processes) change.
func TestOnChangeSeesOtherEngines(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"noop.yaml": "steps:\n  - id: nothing\n    if: false\n    exec: [\"true\"]\n"})
	seen := make(chan string, 100)
	watcher := te.engine(func(o *Options) {
		o.OnChange = func(id string) {
			select {
			case seen <- id:
			default:
			}
		}
	})
	if err := watcher.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	// Started: its first pass has looked at the store.
	deadline := time.After(60 * time.Second)
	for {
		r := te.launch("noop", "") // by another engine
		select {
		case id := <-seen:
			if strings.HasPrefix(id, "run_") {
				return
			}
		case <-deadline:
			t.Fatalf("no change noticed (last launched %s)", r.ID)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
