package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cairnhq/cairn/workspace"
)

// tickScript prints lines stamped with the time they were printed.
const tickScript = `i=0; while [ $i -lt %d ]; do i=$((i+1)); echo "tick $(date +%%s%%N)"; sleep 0.02; done`

// tickWorkflow runs tickScript as its step.
const tickWorkflow = `name: ticks
description: Prints a time-stamped line every 20 ms (the output-latency figure).
steps:
  - id: tick
    shell: '%s'
    timeout: 10m
`

// figOutputLatency measures figure 7.
func figOutputLatency(ctx context.Context, b *bench) error {
	lines := 250
	if b.short {
		lines = 20
	}
	b.rec.declare(7, "line to client p50", "ms", atMost(5))
	b.rec.declare(7, "line to client p99", "ms", atMost(20))
	b.rec.note(7, "%d lines per repetition, one step (a shell loop) of one run; the serve executes the run itself (it launched it). Load average at the start: %s (2 cores). The floor of the method on this machine: the same loop read by the harness straight from the shell's pipe, without Cairn (a diagnostic row).", lines, loadAverage())
	for rep := range b.reps {
		w, err := newWorkspace(ctx, b.disk.Dir, fmt.Sprintf("outlat-%d", rep))
		if err != nil {
			return err
		}
		lat, toJournal, fromJournal, err := outputLatencyOnce(ctx, b, w, lines)
		w.cleanup()
		os.RemoveAll(filepath.Dir(w.Dir))
		if err != nil {
			return err
		}
		b.rec.add(7, "line to client p50", "ms", atMost(5), percentile(lat, 50))
		b.rec.add(7, "line to client p99", "ms", atMost(20), percentile(lat, 99))
		b.rec.add(7, "line to client max", "ms", goal{}, percentile(lat, 100))
		b.rec.add(7, "diagnostic: printed to journal record (the record's time) p50", "ms", goal{}, percentile(toJournal, 50))
		b.rec.add(7, "diagnostic: journal record to client p50", "ms", goal{}, percentile(fromJournal, 50))
		b.rec.add(7, "diagnostic: journal record to client p99", "ms", goal{}, percentile(fromJournal, 99))
		floor, err := pipeLatency(ctx, lines)
		if err != nil {
			return err
		}
		b.rec.add(7, "diagnostic: the same lines read from the shell's pipe, no Cairn, p50", "ms", goal{}, percentile(floor, 50))
		b.rec.add(7, "diagnostic: the same lines read from the shell's pipe, no Cairn, p99", "ms", goal{}, percentile(floor, 99))
		b.logf("fig %d: rep %d: %d lines, p50 %.2f ms, p99 %.2f ms", 7, rep+1, len(lat), percentile(lat, 50), percentile(lat, 99))
	}
	return nil
}

// outputLatencyOnce returns, per line, the time from its printing to the
// client, and its two parts: to the journal record's time (the step's
// supervisor stamps it), and from there to the client.
func outputLatencyOnce(ctx context.Context, b *bench, w *benchWorkspace, lines int) (lat, toJournal, fromJournal []float64, err error) {
	wf := filepath.Join(w.Dir, workspace.DefsDirName, "workflows", "ticks.yaml")
	if err := os.WriteFile(wf, []byte(fmt.Sprintf(tickWorkflow, fmt.Sprintf(tickScript, lines))), 0o600); err != nil {
		return nil, nil, nil, err
	}
	h, err := serve(ctx, b, w)
	if err != nil {
		return nil, nil, nil, err
	}
	defer h.stop(10 * time.Second)
	res, err := h.callTool("launch_run", map[string]any{"target": "ticks"})
	if err != nil {
		return nil, nil, nil, err
	}
	var run struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(res.StructuredContent, &run); err != nil || run.ID == "" {
		return nil, nil, nil, fmt.Errorf("decode launch_run result: %v: %s", err, res.StructuredContent)
	}
	cursor := ""
	for {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		res, err := h.callTool("read_run_output", map[string]any{"run_id": run.ID, "cursor": cursor, "wait_seconds": 10})
		got := time.Now()
		if err != nil {
			return nil, nil, nil, err
		}
		var page struct {
			Records []struct {
				Type string    `json:"type"`
				Text string    `json:"text"`
				Time time.Time `json:"time"`
			} `json:"records"`
			NextCursor string `json:"next_cursor"`
			Done       bool   `json:"done"`
		}
		if err := json.Unmarshal(res.StructuredContent, &page); err != nil {
			return nil, nil, nil, fmt.Errorf("decode read_run_output result: %w", err)
		}
		for _, r := range page.Records {
			ns, ok := strings.CutPrefix(strings.TrimSpace(r.Text), "tick ")
			if !ok {
				continue
			}
			at, err := strconv.ParseInt(ns, 10, 64)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("a line without its time: %q", r.Text)
			}
			printed := time.Unix(0, at)
			lat = append(lat, ms(got.Sub(printed)))
			toJournal = append(toJournal, ms(r.Time.Sub(printed)))
			fromJournal = append(fromJournal, ms(got.Sub(r.Time)))
		}
		cursor = page.NextCursor
		if page.Done {
			break
		}
	}
	if len(lat) < lines {
		return nil, nil, nil, fmt.Errorf("read %d of the %d lines", len(lat), lines)
	}
	return lat, toJournal, fromJournal, nil
}

// pipeLatency runs tickScript with its output piped to the harness and
// returns each line's latency: the floor of this measurement (fork, exit
// and scheduling on this machine now), without Cairn.
func pipeLatency(ctx context.Context, lines int) ([]float64, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", fmt.Sprintf(tickScript, lines))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var lat []float64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		got := time.Now()
		if ns, ok := strings.CutPrefix(sc.Text(), "tick "); ok {
			if at, err := strconv.ParseInt(ns, 10, 64); err == nil {
				lat = append(lat, ms(got.Sub(time.Unix(0, at))))
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("run the tick loop: %w", err)
	}
	return lat, nil
}
