package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// figAdoption measures figure 5: a run's owner is SIGKILLed while another
// peer is up; the time until that peer has claimed the run.
func figAdoption(ctx context.Context, b *bench) error {
	b.rec.declare(5, "SIGKILL to adopted", "ms", atMost(200))
	b.rec.note(5, "Owner: `mcp-host run slow` (attached), killed while its step (`sleep 20`, safe to repeat) runs. Peer: `mcp-host worker`, started after the step and holding locks/worker before the kill. Adopted = the run's owner pid in the store is the worker's (polled every millisecond from the harness). The kill comes at a random moment 0–1.2 s after the worker holds its lock, so that the repetitions sample the phase of a peer's adoption period.")
	for rep := range b.reps {
		w, err := newWorkspace(ctx, b.disk.Dir, fmt.Sprintf("adopt-%d", rep))
		if err != nil {
			return err
		}
		d, err := adoptOnce(ctx, b, w)
		w.cleanup()
		if err != nil {
			return err
		}
		b.rec.add(5, "SIGKILL to adopted", "ms", atMost(200), d)
		b.logf("fig 5: rep %d: adopted %.1f ms after the kill", rep+1, d)
		os.RemoveAll(filepath.Dir(w.Dir))
	}
	return nil
}

func adoptOnce(ctx context.Context, b *bench, w *benchWorkspace) (float64, error) {
	bin, err := b.mcpHost(ctx)
	if err != nil {
		return 0, err
	}
	st, err := sqlite.Open(ctx, w.WS.DBPath(), sqlite.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer st.Close()

	owner, err := startHost(hostParams{Bin: bin, Args: []string{"run", "slow"}, StateRoot: w.StateRoot, Workspace: w.Dir})
	if err != nil {
		return 0, err
	}
	defer owner.kill()
	var run *store.Run
	err = waitFor(ctx, 30*time.Second, 5*time.Millisecond, func() (bool, error) {
		if !processAlive(owner.cmd.Process.Pid) {
			return false, fmt.Errorf("mcp-host run slow exited early%s", owner.stderrTail())
		}
		runs, _, err := st.ListRuns(ctx, store.RunFilter{Limit: 1})
		if err != nil || len(runs) == 0 {
			return false, nil
		}
		run = runs[0]
		return run.Status == store.RunRunning && run.OwnerPID == owner.cmd.Process.Pid && len(pidsWithEnv("CAIRN_BENCH_MARK="+w.Marker)) > 0, nil
	})
	if err != nil {
		return 0, fmt.Errorf("wait for the owner to run its step: %w", err)
	}

	peer, err := startHost(hostParams{Bin: bin, Args: []string{"worker"}, StateRoot: w.StateRoot, Workspace: w.Dir})
	if err != nil {
		return 0, err
	}
	// The worker's own shutdown is not what this figure measures: kill it
	// (cleanup then ends the step processes it and the owner left).
	defer peer.kill()
	err = waitFor(ctx, 30*time.Second, 5*time.Millisecond, func() (bool, error) {
		if !processAlive(peer.cmd.Process.Pid) {
			return false, fmt.Errorf("mcp-host worker exited early%s", peer.stderrTail())
		}
		return w.holderPID("worker") == peer.cmd.Process.Pid, nil
	})
	if err != nil {
		return 0, fmt.Errorf("wait for the worker to start: %w", err)
	}

	// A random phase against the peer's adoption period, so that the
	// repetitions sample it rather than always hitting one phase.
	select {
	case <-time.After(time.Duration(rand.Int64N(int64(1200 * time.Millisecond)))):
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	t0 := time.Now()
	owner.kill()
	var adopted time.Duration
	err = waitFor(ctx, 30*time.Second, time.Millisecond, func() (bool, error) {
		r, err := st.GetRun(ctx, run.ID)
		if err != nil {
			return false, err
		}
		if r.OwnerPID == peer.cmd.Process.Pid {
			adopted = time.Since(t0)
			return true, nil
		}
		return r.Status.Settled(), nil
	})
	if err != nil {
		return 0, fmt.Errorf("wait for the worker to adopt run %s: %w%s", run.ID, err, peer.stderrTail())
	}
	if adopted == 0 {
		return 0, fmt.Errorf("run %s settled without being adopted by the worker", run.ID)
	}
	return ms(adopted), nil
}
