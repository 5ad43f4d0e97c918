package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
)

// fakeRuns is an in-memory RunService. Targets:
//   - "noop": succeeds at once.
//   - "steps": the test drives it with emit/settle.
//   - "ask": waits on a question; an answer makes it succeed.
type fakeRuns struct {
	mu       sync.Mutex
	runs     map[string]*Run
	journal  map[string][]json.RawMessage
	order    []string
	changed  chan struct{}
	writes   int // mutations, to check that bad input changed nothing
	versions int // Version calls
}

func newFakeRuns() *fakeRuns {
	return &fakeRuns{runs: map[string]*Run{}, journal: map[string][]json.RawMessage{}, changed: make(chan struct{})}
}

func (f *fakeRuns) bumpLocked(r *Run) {
	r.Revision++
	r.UpdatedAt = time.Now().UTC()
	f.writes++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeRuns) Targets(context.Context) (*TargetList, error) {
	return &TargetList{Targets: []Target{
		{Name: "noop", Description: "does nothing", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "steps", Description: "driven by the test"},
		{Name: "ask", Description: "asks a question"},
	}}, nil
}

func (f *fakeRuns) Launch(_ context.Context, p LaunchParams) (*Run, error) {
	if !slices.Contains([]string{"noop", "steps", "ask"}, p.Target) {
		return nil, fmt.Errorf("no workflow named %q (list_targets shows the workspace's workflows)", p.Target)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UTC()
	r := &Run{ID: ids.New("run"), Target: p.Target, Status: "running", Input: p.Input, CreatedAt: now,
		Trigger: &RunTrigger{Kind: "mcp"}}
	f.runs[r.ID] = r
	f.order = append(f.order, r.ID)
	f.appendLocked(r.ID, map[string]any{"type": "start", "run": r.ID, "client": p.Client})
	switch p.Target {
	case "noop":
		r.Status = "succeeded"
		r.Result = json.RawMessage(`"ok"`)
		f.appendLocked(r.ID, map[string]any{"type": "end", "status": "succeeded"})
	case "ask":
		r.Status = "waiting"
		r.Question = &Question{ID: "q1", Text: "Go on?", Choices: []string{"yes", "no"}}
		f.appendLocked(r.ID, map[string]any{"type": "question", "text": "Go on?"})
	}
	f.bumpLocked(r)
	cp := *r
	return &cp, nil
}

func (f *fakeRuns) appendLocked(id string, rec map[string]any) {
	b, _ := json.Marshal(rec)
	f.journal[id] = append(f.journal[id], b)
}

// emit appends a record to a running run's journal.
func (f *fakeRuns) emit(id, text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appendLocked(id, map[string]any{"type": "text", "text": text})
	f.bumpLocked(f.runs[id])
}

// settle ends a run.
func (f *fakeRuns) settle(id, status string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.runs[id]
	r.Status = status
	r.Question = nil
	f.appendLocked(id, map[string]any{"type": "end", "status": status})
	f.bumpLocked(r)
}

func (f *fakeRuns) get(id string) (*Run, error) {
	r, ok := f.runs[id]
	if !ok {
		return nil, fmt.Errorf("no run %q", id)
	}
	cp := *r
	return &cp, nil
}

func (f *fakeRuns) Get(_ context.Context, id string) (*Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.get(id)
}

func (f *fakeRuns) List(_ context.Context, p ListRunsParams) (*RunPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	page := &RunPage{}
	for i := len(f.order) - 1; i >= 0; i-- {
		r := f.runs[f.order[i]]
		if (p.Status == "" || r.Status == p.Status) && (p.Target == "" || r.Target == p.Target) {
			cp := *r
			page.Runs = append(page.Runs, &cp)
		}
		if len(page.Runs) == p.Limit {
			break
		}
	}
	return page, nil
}

func (f *fakeRuns) Answer(_ context.Context, id, answer string) (*Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return nil, fmt.Errorf("no run %q", id)
	}
	if r.Status != "waiting" {
		return nil, fmt.Errorf("run %s is not waiting (status: %s)", id, r.Status)
	}
	r.Question = nil
	r.Status = "succeeded"
	r.Result, _ = json.Marshal(answer)
	f.appendLocked(id, map[string]any{"type": "end", "status": "succeeded"})
	f.bumpLocked(r)
	return f.get(id)
}

func (f *fakeRuns) Cancel(_ context.Context, id string) (*Run, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return nil, fmt.Errorf("no run %q", id)
	}
	if r.Settled() {
		return nil, fmt.Errorf("run %s is already %s", id, r.Status)
	}
	r.Status = "cancelled"
	r.Question = nil
	f.appendLocked(id, map[string]any{"type": "end", "status": "cancelled"})
	f.bumpLocked(r)
	return f.get(id)
}

func (f *fakeRuns) ReadOutput(ctx context.Context, p ReadOutputParams) (*OutputPage, error) {
	start := 0
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("invalid cursor %q: pass back a next_cursor this tool returned", p.Cursor)
		}
		start = n
	}
	deadline := time.Now().Add(p.Wait)
	for {
		f.mu.Lock()
		r, ok := f.runs[p.RunID]
		if !ok {
			f.mu.Unlock()
			return nil, fmt.Errorf("no run %q", p.RunID)
		}
		recs := f.journal[p.RunID]
		if start > len(recs) {
			start = len(recs)
		}
		end := min(len(recs), start+p.Limit)
		if end > start || r.Settled() || !time.Now().Before(deadline) {
			page := &OutputPage{RunID: p.RunID, Records: slices.Clone(recs[start:end]), NextCursor: strconv.Itoa(end), Status: r.Status}
			page.Done = r.Settled() && end == len(recs)
			f.mu.Unlock()
			return page, nil
		}
		ch := f.changed
		f.mu.Unlock()
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

func (f *fakeRuns) Version(_ context.Context, id string) (RunVersion, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.runs[id]
	if !ok {
		return RunVersion{}, fmt.Errorf("no run %q", id)
	}
	f.versions++
	return RunVersion{Record: fmt.Sprintf("%d/%s", r.Revision, r.Status), Output: strconv.Itoa(len(f.journal[id])), Settled: r.Settled()}, nil
}

func (f *fakeRuns) mutations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// fakeSessions is an in-memory SessionService.
type fakeSessions struct {
	mu     sync.Mutex
	s      map[string]*Session
	msgs   map[string][]*Message
	writes int
}

func newFakeSessions() *fakeSessions {
	return &fakeSessions{s: map[string]*Session{}, msgs: map[string][]*Message{}}
}

func (f *fakeSessions) Create(_ context.Context, p CreateSessionParams) (*Session, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.ID == "" {
		p.ID = ids.New("ses")
	}
	if s, ok := f.s[p.ID]; ok {
		cp := *s
		return &cp, false, nil
	}
	now := time.Now().UTC()
	s := &Session{ID: p.ID, Title: p.Title, Revision: 1, CreatedAt: now, UpdatedAt: now}
	f.s[p.ID] = s
	f.writes++
	cp := *s
	return &cp, true, nil
}

func (f *fakeSessions) List(_ context.Context, limit int, _ string) (*SessionPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := &SessionPage{}
	for _, s := range f.s {
		cp := *s
		p.Sessions = append(p.Sessions, &cp)
	}
	if len(p.Sessions) > limit {
		p.Sessions = p.Sessions[:limit]
	}
	return p, nil
}

func (f *fakeSessions) Read(_ context.Context, id, _ string, limit int) (*SessionRead, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.s[id]
	if !ok {
		return nil, fmt.Errorf("no session %q", id)
	}
	cp := *s
	m := f.msgs[id]
	return &SessionRead{Session: &cp, Messages: m[:min(limit, len(m))]}, nil
}

func (f *fakeSessions) Append(_ context.Context, id string, msgs []NewMessage) (*Session, []*Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.s[id]
	if !ok {
		return nil, nil, fmt.Errorf("no session %q", id)
	}
	var out []*Message
	for _, nm := range msgs {
		if nm.ID == "" {
			nm.ID = ids.New("msg")
		}
		s.MessageCount++
		m := &Message{ID: nm.ID, Seq: s.MessageCount, Role: nm.Role, Parts: nm.Parts, Metadata: nm.Metadata, CreatedAt: time.Now().UTC()}
		f.msgs[id] = append(f.msgs[id], m)
		out = append(out, m)
	}
	s.Revision++
	f.writes++
	cp := *s
	return &cp, out, nil
}

func (f *fakeSessions) Compact(_ context.Context, p CompactParams) (*Compaction, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.s[p.SessionID]
	if !ok {
		return nil, fmt.Errorf("no session %q", p.SessionID)
	}
	keep := p.KeepLast
	if keep < 0 {
		keep = 4
	}
	n := int64(len(f.msgs[p.SessionID])) - int64(keep)
	if n <= 0 {
		return nil, fmt.Errorf("nothing to compact: session %s has %d message(s) and %d are kept", s.ID, s.MessageCount, keep)
	}
	s.Compactions++
	s.Revision++
	f.writes++
	cp := *s
	return &Compaction{Session: &cp, ArchiveID: "arc_1", Compacted: n}, nil
}

func (f *fakeSessions) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.s[id]; !ok {
		return fmt.Errorf("no session %q", id)
	}
	delete(f.s, id)
	delete(f.msgs, id)
	f.writes++
	return nil
}

func (f *fakeSessions) mutations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// fakeAutomations is an in-memory AutomationService.
type fakeAutomations struct {
	mu     sync.Mutex
	a      map[string]*Automation
	runs   *fakeRuns
	writes int
}

func newFakeAutomations(runs *fakeRuns) *fakeAutomations {
	return &fakeAutomations{a: map[string]*Automation{}, runs: runs}
}

func (f *fakeAutomations) List(_ context.Context, owner string) ([]*Automation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Automation
	for _, a := range f.a {
		if owner == "" || a.Owner == owner {
			cp := *a
			out = append(out, &cp)
		}
	}
	return out, nil
}

func (f *fakeAutomations) Create(_ context.Context, p AutomationSpec) (*Automation, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.a {
		if a.Owner == p.Owner && a.Key == p.Key {
			if !reflect.DeepEqual(a.Trigger, p.When) || a.Target != p.Target {
				return nil, false, fmt.Errorf("automation %q of %s exists with a different spec; use update_automation", p.Key, p.Owner)
			}
			cp := *a
			return &cp, false, nil
		}
	}
	if p.When.Cron == "bad" {
		return nil, false, fmt.Errorf(`invalid cron expression "bad": expected 5 fields`)
	}
	now := time.Now().UTC()
	a := &Automation{ID: ids.New("aut"), Key: p.Key, Owner: p.Owner, Target: p.Target, Input: p.Input, Trigger: p.When,
		Enabled: true, Overlap: "skip", Missed: "skip", Revision: 1, CreatedAt: now, UpdatedAt: now}
	f.a[a.ID] = a
	f.writes++
	cp := *a
	return &cp, true, nil
}

func (f *fakeAutomations) Update(_ context.Context, u AutomationUpdate) (*Automation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.a[u.ID]
	if !ok {
		return nil, fmt.Errorf("no automation %q", u.ID)
	}
	if u.Enabled != nil {
		a.Enabled = *u.Enabled
	}
	if u.Note != nil {
		a.Note = *u.Note
	}
	if u.When != nil {
		a.Trigger = *u.When
	}
	a.Revision++
	f.writes++
	cp := *a
	return &cp, nil
}

func (f *fakeAutomations) Delete(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.a[id]; !ok {
		return fmt.Errorf("no automation %q", id)
	}
	delete(f.a, id)
	f.writes++
	return nil
}

func (f *fakeAutomations) Trigger(ctx context.Context, id string) (*Fire, error) {
	f.mu.Lock()
	a, ok := f.a[id]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no automation %q", id)
	}
	run, err := f.runs.Launch(ctx, LaunchParams{Target: a.Target})
	if err != nil {
		return nil, err
	}
	return &Fire{AutomationID: id, Key: a.Key, Target: a.Target, Outcome: "queued", Nominal: time.Now().UTC(), RunID: run.ID}, nil
}

func (f *fakeAutomations) mutations() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}
