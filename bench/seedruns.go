package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// echoWorkflow is a one-step workflow whose step runs and prints a line:
// a run of it has a ledger entry (the step's start and result) and an
// output journal, as most real runs do.
const echoWorkflow = `name: echo
description: One step that prints a line (the benchmark's run with a step and a journal).
steps:
  - id: say
    exec: ["echo", "hello from a seeded run"]
`

// runTemplate is one real settled run of echo: what every seeded run
// copies (its literals, its ledger, its journal).
type runTemplate struct {
	run     *store.Run
	ledger  []*store.LedgerEntry
	journal []byte // the journal's bytes, in a file or kept with the run
	inFile  bool   // the journal is a file under the output folder
}

// echoTemplate runs echo once through the engine on w and reads back what
// it stored.
func echoTemplate(ctx context.Context, w *benchWorkspace, st *sqlite.Store) (*runTemplate, error) {
	if err := os.WriteFile(filepath.Join(w.WS.WorkflowsDir(), "echo.yaml"), []byte(echoWorkflow), 0o600); err != nil {
		return nil, err
	}
	eng, err := runs.New(runs.Options{Store: st, Workspace: w.WS})
	if err != nil {
		return nil, err
	}
	if err := eng.Start(ctx); err != nil {
		return nil, err
	}
	defer eng.Stop()
	r, err := eng.Launch(ctx, runs.LaunchParams{Target: "echo"})
	if err != nil {
		return nil, fmt.Errorf("launch echo: %w", err)
	}
	if err := waitFor(ctx, time.Minute, time.Millisecond, func() (bool, error) { return eng.Executing() == 0, nil }); err != nil {
		return nil, err
	}
	t := &runTemplate{}
	if t.run, err = st.GetRun(ctx, r.ID); err != nil {
		return nil, err
	}
	if t.run.Status != store.RunSucceeded {
		return nil, fmt.Errorf("the echo run ended %s: %s", t.run.Status, t.run.Error)
	}
	if t.ledger, err = st.Ledger(ctx, r.ID); err != nil {
		return nil, err
	}
	if len(t.ledger) == 0 {
		return nil, errors.New("the echo run recorded no step")
	}
	b, err := os.ReadFile(filepath.Join(w.WS.OutputDir(), r.ID+".jsonl"))
	switch {
	case err == nil:
		t.journal, t.inFile = b, true
	case errors.Is(err, fs.ErrNotExist):
		t.journal = t.run.Journal
	default:
		return nil, err
	}
	if len(t.journal) == 0 {
		return nil, errors.New("the echo run has no journal")
	}
	return t, nil
}

// seedStepRuns stores n settled runs like the template through the store
// API, each written as an owner writes one (created, claimed, its step
// started, settled with the step's outcome), spread over the last n
// seconds, each with its own journal.
func seedStepRuns(ctx context.Context, w *benchWorkspace, st *sqlite.Store, t *runTemplate, n int) error {
	now := time.Now().UTC()
	step := t.ledger[0]
	return parallel(ctx, n, 64, func(ctx context.Context, i int) error {
		id := fmt.Sprintf("run-seed-%07d", i)
		at := now.Add(-time.Duration(n-i) * time.Second)
		r := &store.Run{
			ID: id, Target: t.run.Target, Status: store.RunQueued, Input: t.run.Input, Literals: t.run.Literals,
			Trigger: t.run.Trigger, CreatedAt: at,
		}
		if err := st.CreateRun(ctx, r); err != nil {
			return fmt.Errorf("seed run %d: %w", i, err)
		}
		claim := "seed-" + id
		if _, err := st.ClaimRun(ctx, store.ClaimParams{ID: id, Claim: claim, PID: os.Getpid(), Now: at}); err != nil {
			return fmt.Errorf("seed run %d: claim: %w", i, err)
		}
		if _, err := st.StartStep(ctx, store.StepStart{RunID: id, Claim: claim, Path: step.Path, Position: step.Position, Kind: step.Kind, PID: os.Getpid(), Detail: step.Detail, Now: at}); err != nil {
			return fmt.Errorf("seed run %d: start step: %w", i, err)
		}
		journal := bytes.ReplaceAll(t.journal, []byte(t.run.ID), []byte(id))
		settle := store.SettleParams{
			ID: id, Claim: claim, Status: store.RunSucceeded, Result: t.run.Result, Now: at.Add(10 * time.Millisecond),
			Ledger: []store.StepFinish{{Path: step.Path, Position: step.Position, Kind: step.Kind, Status: step.Status, Result: step.Result, Error: step.Error}},
		}
		if t.inFile {
			if err := os.WriteFile(filepath.Join(w.WS.OutputDir(), id+".jsonl"), journal, 0o600); err != nil {
				return fmt.Errorf("seed run %d: journal: %w", i, err)
			}
		} else {
			settle.Journal = journal
		}
		if _, err := st.SettleRun(ctx, settle); err != nil {
			return fmt.Errorf("seed run %d: settle: %w", i, err)
		}
		return nil
	})
}
