package main

import (
	"bytes"
	"context"
	"database/sql"
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

// copyRuns makes the database of w hold n settled runs of the template
// by copying the seeded ones (run-seed-*) in SQL, one round of copies at a
// time: the rows (runs, their ledger entries) exactly as the store wrote
// them, each copy with its own id (run-copy-<round>-<seeded number>), its
// times shifted back, the next change numbers, and its own journal file.
// Seeding 100,000 runs through the store API takes minutes on a shared
// 2-core machine; copying takes seconds.
func copyRuns(ctx context.Context, w *benchWorkspace, t *runTemplate, n int) error {
	db, err := sql.Open("sqlite", sqliteDSN(w.WS.DBPath(), "NORMAL"))
	if err != nil {
		return err
	}
	defer db.Close()
	var have, base int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM runs").Scan(&have); err != nil {
		return fmt.Errorf("count runs: %w", err)
	}
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM runs WHERE id >= 'run-seed-' AND id < 'run-seed.'").Scan(&base); err != nil {
		return fmt.Errorf("count runs: %w", err)
	}
	if base == 0 && have < n {
		return errors.New("copy runs: no seeded run to copy")
	}
	for round := 1; have < n; round++ {
		limit := min(base, n-have)
		last := fmt.Sprintf("run-seed-%07d", limit-1) // the seeded runs are numbered from 0
		prefix := fmt.Sprintf("run-copy-%04d-", round)
		shift := int64(round) * int64(base) * 1000 // ms: each round older than the last
		if err := copyRound(ctx, db, prefix, last, shift); err != nil {
			return err
		}
		for i := range limit {
			from, id := fmt.Sprintf("run-seed-%07d", i), fmt.Sprintf("%s%07d", prefix, i)
			journal := bytes.ReplaceAll(t.journal, []byte(t.run.ID), []byte(id))
			journal = bytes.ReplaceAll(journal, []byte(from), []byte(id))
			if err := os.WriteFile(filepath.Join(w.WS.OutputDir(), id+".jsonl"), journal, 0o600); err != nil {
				return fmt.Errorf("copy journal: %w", err)
			}
		}
		have += limit
	}
	var runs, entries int
	if err := db.QueryRowContext(ctx, "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM run_ledger)").Scan(&runs, &entries); err != nil {
		return fmt.Errorf("count runs: %w", err)
	}
	if runs != n || entries < n {
		return fmt.Errorf("copy runs: %d runs with %d ledger entries, want %d runs with one each at least", runs, entries, n)
	}
	return nil
}

// copyRound copies the seeded runs up to last, with their ledger entries,
// in one transaction, renaming run-seed-N to prefix+N.
func copyRound(ctx context.Context, db *sql.DB, prefix, last string, shift int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(change_seq), 0) FROM runs").Scan(&seq); err != nil {
		return err
	}
	rename := "?1 || substr(%s, 10)" // after "run-seed-"
	_, err = tx.ExecContext(ctx, `INSERT INTO runs (id, target, status, input, literals, trigger, session_id, result, error, owner_pid, claim,
		cancel_requested, question, wake_at, revision, created_at, updated_at, started_at, finished_at, journal, change_seq)
		SELECT `+fmt.Sprintf(rename, "id")+`, target, status, input, literals, trigger, session_id, result, error, owner_pid, claim || ?1,
		cancel_requested, question, wake_at, revision, created_at - ?3, updated_at - ?3, started_at - ?3, finished_at - ?3, journal,
		?4 + row_number() OVER (ORDER BY id)
		FROM runs WHERE id >= 'run-seed-' AND id <= ?2`, prefix, last, shift, seq)
	if err != nil {
		return fmt.Errorf("copy runs: %w", err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO run_ledger (run_id, path, position, seq, kind, state, status, starts, detail, result, error,
		answer, owner_pid, started_at, finished_at)
		SELECT `+fmt.Sprintf(rename, "run_id")+`, path, position, seq, kind, state, status, starts, detail, result, error,
		answer, owner_pid, started_at - ?3, finished_at - ?3
		FROM run_ledger WHERE run_id >= 'run-seed-' AND run_id <= ?2`, prefix, last, shift)
	if err != nil {
		return fmt.Errorf("copy ledger entries: %w", err)
	}
	return tx.Commit()
}
