package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// fakeEngine is a run engine the tests drive step by step (the real one is
// exercised in runs_adapter_test.go). Targets:
//   - "noop": succeeds at once.
//   - "steps": the test drives it with emit and settle.
//   - "ask": waits on a question; an answer makes it succeed.
//
// Runs it does not know are read from st, where the automations service
// stores the runs it fires.
type fakeEngine struct {
	st store.RunStore

	mu       sync.Mutex
	runs     map[string]*runs.Run
	journal  map[string][]runs.Record
	order    []string
	changed  chan struct{}
	writes   int // mutations, to check that bad input changed nothing
	versions int // GetRun calls (subscription polls)
	// waits, when set, gets a run id each time ReadOutput (under
	// read_run_output and launch_run's Follow) starts waiting for a record.
	waits chan string
}

var (
	_ runEngine = (*fakeEngine)(nil)
	_ runStore  = (*fakeEngine)(nil)
)

func newFakeEngine(st store.RunStore) *fakeEngine {
	return &fakeEngine{st: st, runs: map[string]*runs.Run{}, journal: map[string][]runs.Record{}, changed: make(chan struct{})}
}

// fakeTargets are the fake engine's workflows.
type fakeTargets map[string]*workflows.Workflow

func (t fakeTargets) Target(name string) (*workflows.Workflow, error) {
	if w, ok := t[name]; ok {
		return w, nil
	}
	return nil, fmt.Errorf("no workflow named %q (list_targets shows the workspace's workflows)", name)
}

func (t fakeTargets) List() (map[string]*workflows.Workflow, []error) { return t, nil }

// Snapshot is for preparing runs, which the MCP adapter leaves to the
// engine.
func (t fakeTargets) Snapshot() *runs.Workflows { panic("the MCP adapter does not prepare runs") }

func (f *fakeEngine) Targets() runs.Targets {
	return fakeTargets{
		"noop":  {Name: "noop", Description: "does nothing"},
		"steps": {Name: "steps", Description: "driven by the test"},
		"ask":   {Name: "ask", Description: "asks a question"},
	}
}

func (f *fakeEngine) bumpLocked(r *runs.Run) {
	r.Revision++
	r.UpdatedAt = time.Now().UTC()
	f.writes++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeEngine) appendLocked(id string, rec runs.Record) {
	rec.Time = time.Now().UTC()
	f.journal[id] = append(f.journal[id], rec)
}

func (f *fakeEngine) Launch(_ context.Context, p runs.LaunchParams) (*runs.Run, error) {
	if _, err := f.Targets().Target(p.Target); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UTC()
	r := &runs.Run{Run: store.Run{ID: ids.New("run"), Target: p.Target, Status: store.RunRunning, Input: p.Input, Trigger: p.Trigger, CreatedAt: now}}
	f.runs[r.ID] = r
	f.order = append(f.order, r.ID)
	f.appendLocked(r.ID, runs.Record{Type: "start", Run: r.ID})
	switch p.Target {
	case "noop":
		r.Status = store.RunSucceeded
		r.Result = json.RawMessage(`"ok"`)
		f.appendLocked(r.ID, runs.Record{Type: "end", Status: "succeeded"})
	case "ask":
		r.Status = store.RunWaiting
		r.Question = &store.Question{ID: "q1", Text: "Go on?", Choices: []string{"yes", "no"}, Kind: "ask", Step: "q"}
		f.appendLocked(r.ID, runs.Record{Type: "question", Question: r.Question})
	}
	f.bumpLocked(r)
	return f.copyLocked(r), nil
}

func (f *fakeEngine) copyLocked(r *runs.Run) *runs.Run {
	cp := *r
	return &cp
}

// emit appends a record to a running run's journal.
func (f *fakeEngine) emit(id, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appendLocked(id, runs.Record{Type: "text", Text: text})
	f.bumpLocked(f.runs[id])
}

// settle ends a run.
func (f *fakeEngine) settle(id string, status store.RunStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.settleLocked(f.runs[id], status)
}

func (f *fakeEngine) settleLocked(r *runs.Run, status store.RunStatus) {
	r.Status = status
	r.Question = nil
	f.appendLocked(r.ID, runs.Record{Type: "end", Status: string(status)})
	f.bumpLocked(r)
}

// first is the id of the first run launched.
func (f *fakeEngine) first() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.order[0]
}

func (f *fakeEngine) getLocked(id string) (*runs.Run, error) {
	r, ok := f.runs[id]
	if !ok {
		return nil, fmt.Errorf("no run %q", id)
	}
	return r, nil
}

func (f *fakeEngine) Get(ctx context.Context, id string) (*runs.Run, error) {
	f.mu.Lock()
	r, err := f.getLocked(id)
	if err == nil {
		defer f.mu.Unlock()
		return f.copyLocked(r), nil
	}
	f.mu.Unlock()
	if f.st == nil {
		return nil, err
	}
	if sr, serr := f.st.GetRun(ctx, id); serr == nil {
		return &runs.Run{Run: *sr}, nil
	}
	return nil, err
}

func (f *fakeEngine) GetRun(ctx context.Context, id string) (*store.Run, error) {
	r, err := f.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.versions++
	f.mu.Unlock()
	return &r.Run, nil
}

func (f *fakeEngine) List(_ context.Context, p runs.ListParams) ([]*runs.Run, string, error) {
	for _, s := range p.Status {
		if !s.Valid() {
			return nil, "", fmt.Errorf("list runs: unknown status %q", s)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*runs.Run
	for i := len(f.order) - 1; i >= 0 && len(out) < p.Limit; i-- {
		r := f.runs[f.order[i]]
		if (len(p.Status) == 0 || r.Status == p.Status[0]) && (p.Target == "" || r.Target == p.Target) {
			out = append(out, f.copyLocked(r))
		}
	}
	return out, "", nil
}

func (f *fakeEngine) Answer(_ context.Context, p runs.AnswerParams) (*runs.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.getLocked(p.RunID)
	if err != nil {
		return nil, err
	}
	if r.Status != store.RunWaiting {
		return nil, fmt.Errorf("run %s is not waiting (status: %s)", r.ID, r.Status)
	}
	r.Result, _ = json.Marshal(p.Answer)
	f.settleLocked(r, store.RunSucceeded)
	return f.copyLocked(r), nil
}

func (f *fakeEngine) Cancel(_ context.Context, id string) (*runs.Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.getLocked(id)
	if err != nil {
		return nil, err
	}
	if r.Status.Settled() {
		return nil, fmt.Errorf("run %s is already %s", id, r.Status)
	}
	f.settleLocked(r, store.RunCancelled)
	return f.copyLocked(r), nil
}

// Follow follows as the engine does, over the fake's ReadOutput and Get.
func (f *fakeEngine) Follow(ctx context.Context, id string, p runs.FollowParams) (*runs.Followed, error) {
	deadline := time.Now().Add(p.Wait)
	cursor := p.Cursor
	for {
		r, err := f.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if r.Status.Settled() || r.Status == store.RunWaiting && r.Question != nil {
			return &runs.Followed{Run: r, Cursor: cursor, Reached: true}, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &runs.Followed{Run: r, Cursor: cursor}, nil
		}
		page, err := f.ReadOutput(ctx, id, runs.ReadParams{Cursor: cursor, Wait: min(left, time.Second)})
		if err != nil {
			return nil, err
		}
		for _, rec := range page.Records {
			if p.OnRecord != nil {
				if err := p.OnRecord(rec); err != nil {
					return nil, err
				}
			}
		}
		cursor = page.Cursor
	}
}

func (f *fakeEngine) ReadOutput(ctx context.Context, id string, p runs.ReadParams) (*runs.Output, error) {
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid cursor %q: pass back a next_cursor this tool returned", p.Cursor)
		}
		start = n
	}
	if p.Limit <= 0 {
		p.Limit = 1000
	}
	deadline := time.Now().Add(p.Wait)
	for {
		f.mu.Lock()
		r, err := f.getLocked(id)
		if err != nil {
			f.mu.Unlock()
			return nil, err
		}
		recs := f.journal[id]
		start = min(start, len(recs))
		end := min(len(recs), start+p.Limit)
		if end > start || r.Status.Settled() || !time.Now().Before(deadline) {
			out := &runs.Output{RunID: id, Records: append([]runs.Record(nil), recs[start:end]...), Cursor: strconv.Itoa(end), Status: r.Status}
			out.Done = r.Status.Settled() && end == len(recs)
			f.mu.Unlock()
			return out, nil
		}
		ch, waits := f.changed, f.waits
		f.mu.Unlock()
		if waits != nil {
			select {
			case waits <- id:
			default:
			}
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		t.Stop()
	}
}

func (f *fakeEngine) OutputSize(_ context.Context, id string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.runs[id]; !ok {
		return 0, errors.New("no journal")
	}
	return int64(len(f.journal[id])), nil
}

func (f *fakeEngine) mutations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}
