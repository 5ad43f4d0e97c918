package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/workflows"
)

// runCommands: run, runs (show), watch, answer, cancel, worker, list, init.
func (e *env) runCommands() []*cobra.Command {
	return []*cobra.Command{
		e.runCommand(), e.runsCommand(), e.watchCommand(), e.answerCommand(), e.cancelCommand(),
		e.workerCommand(), e.listCommand(), e.initCommand(),
	}
}

// readInput returns --input: JSON text, "@file" for a file's content, or
// "-" for stdin; nil when it is empty.
func (e *env) readInput(s string) (json.RawMessage, error) {
	switch {
	case s == "":
		return nil, nil
	case s == "-":
		b, err := io.ReadAll(io.LimitReader(e.stdio.In, 16<<20))
		if err != nil {
			return nil, fmt.Errorf("read input from stdin: %w", err)
		}
		return b, nil
	case strings.HasPrefix(s, "@"):
		b, err := os.ReadFile(s[1:])
		if err != nil {
			return nil, fmt.Errorf("read input: %w", err)
		}
		return b, nil
	}
	return json.RawMessage(s), nil
}

func (e *env) runCommand() *cobra.Command {
	var (
		input  string
		detach bool
	)
	cmd := &cobra.Command{
		Use:   "run <target>",
		Short: "Launch a run of a workflow and follow it (or --detach it)",
		Long: `Launch a run of the workflow <target> (a file in .cairn/workflows/) with the
given input, validated against the workflow's input schema.

Attached (the default), the run executes in this process and its output is
streamed; when it parks on a question, answer it from anywhere with
mcp-host answer. Exit status 0 when the run succeeded, 1 when it failed or
was cancelled. Ctrl-C cancels the run.

With --detach, the run id is printed and the run goes on in a background
worker (mcp-host worker, started if none runs; its log is worker.log in the
workspace's state folder).`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if detach && e.dryRun {
				return usagef("--detach cannot be used with --dry-run: a dry run lives only in this process")
			}
			in, err := e.readInput(input)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			re, err := e.open(ctx, true)
			if err != nil {
				return err
			}
			defer re.Close()
			r, err := re.Runs.Launch(ctx, runs.LaunchParams{Target: args[0], Input: in, Detach: detach})
			if err != nil {
				return err
			}
			if detach {
				return e.detached(re, r)
			}
			return e.attached(ctx, re, r)
		},
	}
	cmd.Flags().StringVar(&input, "input", "", `input as a JSON object, @FILE, or - for stdin`)
	cmd.Flags().BoolVar(&detach, "detach", false, "print the run id and let a background worker run it")
	return cmd
}

// detached prints a queued run and makes sure a worker will run it.
func (e *env) detached(re *host.Host, r *runs.Run) error {
	pid, err := startWorker(e, re.Workspace)
	if err != nil {
		fmt.Fprintf(e.stdio.Err, "mcp-host: run %s is queued but no worker could be started (%v); start one with: mcp-host worker\n", r.ID, err)
	} else if pid > 0 {
		e.log.Info("started a background worker", "pid", pid, "log", re.Workspace.LogPath())
	}
	if e.json {
		return e.printJSON(r)
	}
	e.printf("%s\n", r.ID)
	fmt.Fprintf(e.stdio.Err, "follow it with: mcp-host watch %s\n", r.ID)
	return nil
}

// attached follows a run executing in this process to its end.
func (e *env) attached(ctx context.Context, re *host.Host, r *runs.Run) error {
	p := runs.WatchParams{
		Resume:      true,
		OnOwnerGone: func(pid int) { e.ownerGone(pid) },
	}
	var answers chan string
	if !e.json {
		p.OnRecord = func(rec runs.Record) error { e.printRecord(r.ID, rec); return nil }
	} else if !e.dryRun {
		// stdout is for the final JSON; tell the person what the run waits for.
		p.OnRecord = func(rec runs.Record) error {
			if rec.Type == runs.RecordQuestion && rec.Question != nil {
				fmt.Fprintf(e.stdio.Err, "mcp-host: run %s asks: %s; answer with: mcp-host answer %s <answer>\n", r.ID, rec.Question.Text, r.ID)
			}
			return nil
		}
	}
	if e.dryRun {
		// Nothing outside this process can answer a dry run: read answers
		// from stdin.
		answers = readLines(e.stdio.In)
		inner := p.OnRecord
		p.OnRecord = func(rec runs.Record) error {
			if inner != nil {
				inner(rec)
			}
			if rec.Type == runs.RecordQuestion && rec.Question != nil {
				return e.answerFromStdin(ctx, re, r.ID, rec.Question, answers)
			}
			return nil
		}
	}
	done, err := re.Runs.Watch(ctx, r.ID, p)
	if err != nil {
		if ctx.Err() == nil {
			return err
		}
		return e.interrupted(re, r.ID)
	}
	return e.finished(done)
}

// interrupted handles Ctrl-C on an attached run: a run executing here is
// cancelled; a parked one stays parked for a later answer.
func (e *env) interrupted(re *host.Host, id string) error {
	bg := context.Background()
	cur, err := re.Runs.Get(bg, id)
	if err != nil {
		return err
	}
	if cur.Status == store.RunWaiting && !e.dryRun {
		fmt.Fprintf(e.stdio.Err, "mcp-host: run %s stays parked; answer it later with: mcp-host answer %s <answer>\n", id, id)
		return &exitError{code: ExitFailure}
	}
	if !cur.Status.Settled() {
		if _, err := re.Runs.Cancel(bg, id); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	done, err := re.Runs.WaitSettledOrParked(wctx, id)
	if err != nil {
		return fmt.Errorf("cancel run %s: %w", id, err)
	}
	return e.finished(done)
}

// finished prints a settled run and returns its exit status.
func (e *env) finished(r *runs.Run) error {
	if e.json {
		if err := e.printJSON(r); err != nil {
			return err
		}
	}
	if r.Status == store.RunSucceeded {
		return nil
	}
	return &exitError{code: ExitFailure}
}

func readLines(r io.Reader) chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- strings.TrimSpace(sc.Text())
		}
	}()
	return ch
}

func (e *env) answerFromStdin(ctx context.Context, re *host.Host, id string, q *store.Question, answers chan string) error {
	for {
		fmt.Fprintf(e.stdio.Err, "answer: ")
		var (
			a  string
			ok bool
		)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case a, ok = <-answers:
		}
		if !ok {
			_, err := re.Runs.Cancel(ctx, id)
			return err
		}
		_, err := re.Runs.Answer(ctx, runs.AnswerParams{RunID: id, QuestionID: q.ID, Answer: a})
		var ae *runs.AnswerError
		if errors.As(err, &ae) {
			fmt.Fprintf(e.stdio.Err, "%v\n", err)
			continue
		}
		return err
	}
}

func (e *env) ownerGone(pid int) {
	fmt.Fprintf(e.stdio.Err, "mcp-host: owner pid %d is gone without an ending; a live peer (mcp-host worker, or any mcp-host serving this workspace) resumes the run\n", pid)
}

// printRecord writes a journal record as people read it.
func (e *env) printRecord(id string, rec runs.Record) {
	switch rec.Type {
	case runs.RecordStart:
		e.printf("run %s (%s) started by pid %d\n", rec.Run, rec.Target, rec.PID)
	case runs.RecordText:
		if rec.Stream == "stderr" {
			e.printf("[%s stderr] %s\n", rec.Step, rec.Text)
		} else {
			e.printf("[%s] %s\n", rec.Step, rec.Text)
		}
	case runs.RecordStep:
		word := rec.Event
		if rec.Event == "finished" {
			word = rec.Status
		}
		line := rec.Step + " " + word
		if rec.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d)", rec.Attempt)
		}
		if rec.Error != "" {
			line += ": " + rec.Error
		} else if rec.Text != "" {
			line += ": " + rec.Text
		}
		e.printf("-- %s\n", line)
	case runs.RecordNote:
		e.printf("-- %s\n", rec.Text)
	case runs.RecordQuestion:
		q := rec.Question
		if q == nil {
			return
		}
		choices := ""
		if len(q.Choices) > 0 {
			choices = " [" + strings.Join(q.Choices, "/") + "]"
		}
		e.printf("?? %s%s\n", q.Text, choices)
		if !e.dryRun {
			e.printf("   answer with: mcp-host answer %s <answer>\n", id)
		}
	case runs.RecordAnswer:
		e.printf("-- answered: %s\n", rec.Text)
	case runs.RecordEnd:
		switch {
		case rec.Error != "":
			e.printf("run %s %s: %s\n", id, rec.Status, rec.Error)
		case len(rec.Result) > 0:
			e.printf("run %s %s: %s\n", id, rec.Status, rec.Result)
		default:
			e.printf("run %s %s\n", id, rec.Status)
		}
	}
}

func (e *env) runsCommand() *cobra.Command {
	var (
		status, target, cursor string
		limit                  int
	)
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List runs, newest first (runs show <id> for one)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			p := runs.ListParams{Target: target, Limit: limit, Cursor: cursor}
			if limit < 0 || limit > store.MaxListLimit {
				return usagef("--limit %d: use 1 to %d", limit, store.MaxListLimit)
			}
			for _, s := range strings.Split(status, ",") {
				if s = strings.TrimSpace(s); s == "" {
					continue
				}
				if !store.RunStatus(s).Valid() {
					return usagef("--status %q: use queued, running, waiting, succeeded, failed or cancelled (comma-separated)", s)
				}
				p.Status = append(p.Status, store.RunStatus(s))
			}
			ctx := cmd.Context()
			re, err := e.open(ctx, false)
			if err != nil {
				return err
			}
			defer re.Close()
			list, next, err := re.Runs.List(ctx, p)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(struct {
					Runs       []*runs.Run `json:"runs"`
					NextCursor string      `json:"next_cursor,omitempty"`
				}{list, next})
			}
			if len(list) == 0 {
				e.printf("no runs\n")
				return nil
			}
			tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTARGET\tSTATUS\tCREATED\t")
			for _, r := range list {
				note := r.Error
				if r.Question != nil {
					note = "asks: " + r.Question.Text
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Target, r.Status, r.CreatedAt.Local().Format(time.DateTime), oneLine(note, 60))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if next != "" {
				e.printf("more: mcp-host runs --cursor %s\n", next)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&status, "status", "", "only runs with this status (comma-separated: queued, running, waiting, succeeded, failed, cancelled)")
	f.StringVar(&target, "target", "", "only runs of this target")
	f.IntVar(&limit, "limit", 50, "at most this many runs")
	f.StringVar(&cursor, "cursor", "", "continue a previous listing")
	cmd.AddCommand(e.runsShowCommand())
	return cmd
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (e *env) runsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show <run-id>",
		Short: "Show one run: status, input, result, question, steps",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			re, err := e.open(ctx, false)
			if err != nil {
				return err
			}
			defer re.Close()
			r, err := re.Runs.Get(ctx, args[0])
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(r)
			}
			e.printRun(r)
			return nil
		},
	}
}

func (e *env) printRun(r *runs.Run) {
	tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, v)
		}
	}
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format(time.DateTime)
	}
	row("run", r.ID)
	row("target", r.Target)
	status := string(r.Status)
	if r.CancelRequested && !r.Status.Settled() {
		status += " (cancel requested)"
	}
	row("status", status)
	trig := r.Trigger.Kind
	if r.Trigger.AutomationID != "" {
		trig += " " + r.Trigger.AutomationID
	}
	row("trigger", trig)
	row("created", ts(r.CreatedAt))
	row("started", ts(r.StartedAt))
	row("finished", ts(r.FinishedAt))
	if r.OwnerPID != 0 {
		row("owner", fmt.Sprintf("pid %d", r.OwnerPID))
	}
	if !r.WakeAt.IsZero() {
		row("wakes", ts(r.WakeAt))
	}
	row("input", string(r.Input))
	row("result", string(r.Result))
	row("error", r.Error)
	if q := r.Question; q != nil {
		text := q.Text
		if len(q.Choices) > 0 {
			text += " [" + strings.Join(q.Choices, "/") + "]"
		}
		row("question", text)
		row("answer", fmt.Sprintf("mcp-host answer %s <answer>", r.ID))
	}
	tw.Flush()
	if len(r.Steps) == 0 {
		return
	}
	e.printf("steps\n")
	tw = tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
	for _, s := range r.Steps {
		var notes []string
		if s.Attempts > 1 {
			notes = append(notes, fmt.Sprintf("%d attempts", s.Attempts))
		}
		if s.ExitCode != nil {
			notes = append(notes, fmt.Sprintf("exit %d", *s.ExitCode))
		}
		if s.StatusCode != 0 {
			notes = append(notes, fmt.Sprintf("HTTP %d", s.StatusCode))
		}
		if s.Answer != nil {
			notes = append(notes, fmt.Sprintf("answer %q", *s.Answer))
		}
		if !s.Until.IsZero() && s.Status != runs.StepSucceeded {
			notes = append(notes, "until "+ts(s.Until))
		}
		if s.Error != "" {
			notes = append(notes, s.Error)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.ID, s.Kind, s.Status, strings.Join(notes, ", "))
	}
	tw.Flush()
}

func (e *env) watchCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "watch <run-id>",
		Short: "Follow a run's output until it ends (exit 0 when it succeeded, 1 otherwise)",
		Long: `Follow a run's output journal from any process until the run ends. Exit
status 0 when the run succeeded, 1 when it failed or was cancelled. With
--json, each journal record is printed as one JSON line.

When the process executing the run died without an ending, watch says so and
goes on following: a live peer (mcp-host worker, or any mcp-host serving the
workspace) adopts the run and resumes it.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			re, err := e.open(ctx, false)
			if err != nil {
				return err
			}
			defer re.Close()
			id := args[0]
			if _, err := re.Runs.Get(ctx, id); err != nil {
				return err
			}
			enc := json.NewEncoder(e.stdio.Out)
			done, err := re.Runs.Watch(ctx, id, runs.WatchParams{
				OnRecord: func(rec runs.Record) error {
					if e.json {
						return enc.Encode(rec)
					}
					e.printRecord(id, rec)
					return nil
				},
				OnOwnerGone: e.ownerGone,
			})
			if err != nil {
				return err
			}
			if done.Status == store.RunSucceeded {
				return nil
			}
			return &exitError{code: ExitFailure}
		},
	}
}

func (e *env) answerCommand() *cobra.Command {
	var question string
	cmd := &cobra.Command{
		Use:   "answer <run-id> <answer>",
		Short: "Answer the question a waiting run asks; the run then resumes",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			re, err := e.open(ctx, false)
			if err != nil {
				return err
			}
			defer re.Close()
			r, err := re.Runs.Answer(ctx, runs.AnswerParams{RunID: args[0], QuestionID: question, Answer: args[1]})
			if err != nil {
				return err
			}
			// The run is runnable again: a worker resumes it unless a peer
			// (the attached `run` that launched it, a serve) does first.
			if _, inMemory := re.Store.(*memory.Store); !inMemory && !e.dryRun {
				if _, err := startWorker(e, re.Workspace); err != nil {
					fmt.Fprintf(e.stdio.Err, "mcp-host: no worker could be started (%v); the run resumes in the next mcp-host for this workspace (mcp-host worker)\n", err)
				}
			}
			if e.json {
				return e.printJSON(r)
			}
			e.printf("answered run %s: %s\n", r.ID, args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&question, "question", "", "the id of the question answered (refused if another one is open)")
	return cmd
}

func (e *env) cancelCommand() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel <run-id>",
		Short: "Cancel a run (a running step's processes get SIGTERM, then SIGKILL)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			re, err := e.open(ctx, false)
			if err != nil {
				return err
			}
			defer re.Close()
			r, err := re.Runs.Cancel(ctx, args[0])
			if err != nil {
				return err
			}
			if !r.Status.Settled() && wait > 0 {
				wctx, cancel := context.WithTimeout(ctx, wait)
				done, err := re.Runs.WaitSettledOrParked(wctx, r.ID)
				cancel()
				if err == nil {
					r = done
				} else if r, err = re.Runs.Get(ctx, r.ID); err != nil {
					return err
				}
			}
			if e.json {
				return e.printJSON(r)
			}
			if r.Status.Settled() {
				e.printf("run %s %s\n", r.ID, r.Status)
			} else {
				e.printf("cancel requested: run %s is still %s; its owner (pid %d) stops it\n", r.ID, r.Status, r.OwnerPID)
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 15*time.Second, "wait this long for a running run to stop (0: do not wait)")
	return cmd
}

// targetInfo is one workflow as `list --json` shows it.
type targetInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	File        string          `json:"file"`
	Steps       int             `json:"steps"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func (e *env) listCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the workflows this workspace can run, and its schedules with their last and next times",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := e.workspace()
			if err != nil {
				return err
			}
			wfs, problems := runs.DirTargets(ws.WorkflowsDir()).List()
			var st workspaceStatus // the workspace's automations, read-only
			if err := readStore(cmd.Context(), ws.DBPath(), &st); err != nil {
				return err
			}
			out := struct {
				Targets   []targetInfo          `json:"targets"`
				Schedules []automations.Summary `json:"schedules"`
				Errors    []string              `json:"errors"`
			}{Targets: []targetInfo{}, Schedules: st.Schedules, Errors: []string{}}
			for name, wf := range wfs {
				out.Targets = append(out.Targets, targetInfo{Name: name, Description: wf.Description, File: filepath.Base(wf.File), Steps: len(wf.Steps), InputSchema: wf.InputSchema()})
			}
			sort.Slice(out.Targets, func(i, j int) bool { return out.Targets[i].Name < out.Targets[j].Name })
			for _, p := range problems {
				out.Errors = append(out.Errors, p.Error())
			}
			if e.json {
				return e.printJSON(out)
			}
			if len(out.Targets) == 0 && len(out.Errors) == 0 {
				e.printf("no workflows in %s (mcp-host init writes a starter)\n", ws.WorkflowsDir())
				return nil
			}
			tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
			for _, t := range out.Targets {
				fmt.Fprintf(tw, "%s\t%s\n", t.Name, oneLine(t.Description, 80))
			}
			tw.Flush()
			if len(out.Schedules) > 0 {
				e.printf("\nschedules:\n")
				for _, a := range out.Schedules {
					e.printf("  %s\n", scheduleLine(a))
				}
			}
			for _, p := range out.Errors {
				fmt.Fprintf(e.stdio.Err, "mcp-host: %s\n", p)
			}
			return nil
		},
	}
}

func (e *env) initCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Write a starter workflow, .cairn/workflows/hello.yaml (never overwrites)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := e.workspace()
			if err != nil {
				return err
			}
			p := filepath.Join(ws.WorkflowsDir(), workflows.StarterFile)
			res := struct {
				Path    string `json:"path"`
				Written bool   `json:"written"`
			}{Path: p}
			if !e.dryRun {
				if res.Written, err = writeNew(p, workflows.Starter()); err != nil {
					return err
				}
			}
			if e.json {
				return e.printJSON(res)
			}
			switch {
			case e.dryRun:
				e.printf("would write %s (dry run)\n", p)
			case res.Written:
				e.printf("wrote %s; run it with: mcp-host run hello\n", p)
			default:
				e.printf("%s exists; left it untouched\n", p)
			}
			return nil
		},
	}
}

// writeNew creates p with data unless it exists; it reports whether it
// wrote.
func writeNew(p string, data []byte) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", p, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(p)
		return false, fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(p)
		return false, fmt.Errorf("write %s: %w", p, err)
	}
	return true, nil
}
