package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// runCommands: run, runs (show), watch, answer, cancel, worker, list, init.
// Each lives in the file named after it.
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
			return e.withHost(ctx, true, func(re *host.Host) error {
				for _, w := range host.WorkflowWarnings(re.Runs.Targets(), args[0]) {
					fmt.Fprintf(e.stdio.Err, "mcp-host: warning: %s\n", w)
				}
				r, err := re.Runs.Launch(ctx, runs.LaunchParams{Target: args[0], Input: in, Detach: detach})
				if err != nil {
					return err
				}
				if detach {
					return e.detached(re, r)
				}
				return e.attached(ctx, re, r)
			})
		},
	}
	cmd.Flags().StringVar(&input, "input", "", `input as a JSON object, @FILE, or - for stdin`)
	cmd.Flags().BoolVar(&detach, "detach", false, "print the run id and let a background worker run it")
	return cmd
}

// detached prints a queued run and makes sure a worker will run it.
func (e *env) detached(re *host.Host, r *runs.Run) error {
	e.ensureWorker(re, "run "+r.ID)
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
		p.OnRecord = func(rec runs.Record) error { e.askedOnStderr(r.ID, rec); return nil }
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

// askedOnStderr tells the person what a run followed with --json asks
// (stdout is for the final JSON).
func (e *env) askedOnStderr(id string, rec runs.Record) {
	if rec.Type == runs.RecordQuestion && rec.Question != nil {
		fmt.Fprintf(e.stdio.Err, "mcp-host: run %s asks: %s; answer with: mcp-host answer %s <answer>\n", id, rec.Question.Text, id)
	}
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
	case runs.RecordTruncated:
		e.printf("-- %s\n", rec.Text)
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
