package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/mcp/transport"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// tools lists every tool the server registers.
func (s *Server) tools() []server.ServerTool {
	return []server.ServerTool{
		s.listTargetsTool(), s.launchRunTool(), s.getRunTool(), s.listRunsTool(),
		s.readRunOutputTool(), s.answerRunTool(), s.cancelRunTool(),
		s.listAutomationsTool(), s.createAutomationTool(), s.updateAutomationTool(),
		s.deleteAutomationTool(), s.triggerAutomationTool(),
		s.listSessionsTool(), s.getSessionTool(), s.createSessionTool(),
		s.appendSessionMessagesTool(), s.compactSessionTool(), s.deleteSessionTool(),
	}
}

func (s *Server) runs() (runEngine, error) {
	if s.p.Runs == nil {
		return nil, &unavailableError{"runs"}
	}
	return s.p.Runs, nil
}

// fingerprint is the version of a run's resources, for subscriptions: it
// reads the bare record, which is cheap, and the journal's size.
func (s *Server) fingerprint(ctx context.Context, id string) (fingerprint, error) {
	rs, err := s.runs()
	if err != nil {
		return fingerprint{}, err
	}
	if s.p.RunStore == nil {
		return fingerprint{}, &unavailableError{"run subscriptions"}
	}
	r, err := s.p.RunStore.GetRun(ctx, id)
	if err != nil {
		return fingerprint{}, err
	}
	n, err := rs.OutputSize(ctx, id)
	if err != nil {
		return fingerprint{}, fmt.Errorf("size journal of run %s: %w", id, err)
	}
	return fingerprint{record: fmt.Sprintf("%d/%s", r.Revision, r.Status), output: strconv.FormatInt(n, 10), settled: r.Status.Settled()}, nil
}

func validateID(kind, arg, v string) error {
	if err := ids.Validate(kind, v); err != nil {
		return &argumentError{Name: arg, Reason: err.Error()}
	}
	return nil
}

func waitDuration(arg string, secs float64) (time.Duration, error) {
	if secs < 0 || secs > maxWaitSeconds {
		return 0, &argumentError{Name: arg, Reason: fmt.Sprintf("%v is out of range: use 0 to %d seconds", secs, maxWaitSeconds)}
	}
	return time.Duration(secs * float64(time.Second)), nil
}

type listTargetsIn struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
	budgetIn
}

func (s *Server) listTargetsTool() server.ServerTool {
	return newTool("list_targets", "List launchable workflows",
		"List the workflows this workspace defines (.cairn/workflows/*.yaml) that launch_run can start, by name, each with its description, the JSON Schema of its input and the automations its file declares; problems lists workflow files that failed to load, with file, line and field. "+
			"Pages: pass next_cursor back as cursor to continue.",
		object(nil, withBudget(obj{
			"limit":  integer("Most targets to return (default 100).", 1, maxTargetsPage),
			"cursor": cursorArg(),
		})),
		outputSchema[targetList](),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in listTargetsIn) (*targetList, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			if err := checkListCursor(in.Cursor); err != nil {
				return nil, err
			}
			all := newTargetList(rs.Targets())
			room := in.room()
			out := &targetList{}
			if in.Cursor == "" {
				out.Problems = fitProblems(all.Problems, room/4)
				room -= page.JSONLen(out.Problems)
				out.Warnings = fitProblems(all.Warnings, room/4)
				room -= page.JSONLen(out.Warnings)
			}
			out.Targets, out.NextCursor, err = page.Slice(all.Targets, func(t target) string { return t.Name }, in.Cursor, cmp.Or(in.Limit, 100), room,
				func(t target) string { return "target " + t.Name })
			return out, err
		}))
}

type launchIn struct {
	Target      string          `json:"target"`
	Input       json.RawMessage `json:"input"`
	WaitSeconds float64         `json:"wait_seconds"`
}

func (s *Server) launchRunTool() server.ServerTool {
	return newTool("launch_run", "Launch a workflow run",
		"Start a durable run of a workflow (see list_targets) and return the run. The run executes in the background and survives restarts; its steps may run commands and reach the network, as the workflow defines. "+
			"With wait_seconds > 0 the call waits up to that long for the run to settle (succeeded, failed, cancelled) or to park on a question (status waiting with a question), sending a progress notification per batch of output when the request carries a progress token; the run goes on when the wait ends. "+
			"Follow it afterwards with read_run_output or get_run; answer a question with answer_run.",
		object([]string{"target"}, obj{
			"target":       idArg("Name of the workflow to run, as list_targets shows it."),
			"input":        openObject("Input object, validated against the target's input schema. Omit for none."),
			"wait_seconds": waitArg("for the run to settle or park"),
		}),
		outputSchema[runs.Run](),
		hints{destructive: true, openWorld: true},
		handler(func(ctx context.Context, c *call, in launchIn) (*runs.Run, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			if err := validateID("target name", "target", in.Target); err != nil {
				return nil, err
			}
			wait, err := waitDuration("wait_seconds", in.WaitSeconds)
			if err != nil {
				return nil, err
			}
			if len(in.Input) > 0 && string(in.Input) == "null" {
				in.Input = nil
			}
			by := s.principal(ctx)
			if err := s.p.Policy.CanLaunch(by, in.Target); err != nil {
				return nil, err
			}
			run, err := rs.Launch(ctx, runs.LaunchParams{Target: in.Target, Input: in.Input, Trigger: store.Trigger{Kind: "mcp", Client: s.clientName(ctx), Principal: string(by)}})
			if err != nil {
				return nil, err
			}
			noteSubject(ctx, run.ID)
			s.elicit.follow(ctx, run.ID)
			s.subs.poke()
			if wait <= 0 {
				return run, nil
			}
			waitCtx, cancel := transport.WaitContext(ctx)
			defer cancel()
			return s.awaitRun(waitCtx, c, rs, run, wait)
		}))
}

// awaitRun follows a run until it settles or parks, or wait passes,
// sending a progress notification per batch of journal records and per
// status change, and returns the run as it is then. The caller's
// cancellation ends the wait early without failing the call: the run is
// returned as it is.
//
// It follows with the engine's one follow loop (runs.Engine.Follow).
func (s *Server) awaitRun(ctx context.Context, c *call, rs runEngine, run *runs.Run, wait time.Duration) (*runs.Run, error) {
	c.Progress(ctx, 0, fmt.Sprintf("run %s %s", run.ID, run.Status))
	if parkedOrSettled(run) {
		return run, nil
	}
	seen, last := 0, time.Time{}
	f, err := rs.Follow(ctx, run.ID, runs.FollowParams{
		Until: runs.UntilSettledOrParked,
		Wait:  wait,
		OnRecord: func(rec runs.Record) error {
			// The first record at once, then at most one notification
			// per progressEvery, not one per record.
			if seen++; time.Since(last) >= progressEvery {
				last = time.Now()
				c.Progress(ctx, 0, fmt.Sprintf("run %s: %d output records", run.ID, seen))
			}
			return nil
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return run, nil // the caller went away: no error to report
		}
		return run, err
	}
	if f.Run.Status != run.Status {
		c.Progress(ctx, 0, fmt.Sprintf("run %s: %d output records, %s", run.ID, seen, f.Run.Status))
	}
	return f.Run, nil
}

// progressEvery spaces launch_run's progress notifications while output
// streams in.
const progressEvery = 250 * time.Millisecond

// parkedOrSettled reports whether a wait for run is over.
func parkedOrSettled(r *runs.Run) bool {
	return r.Status.Settled() || r.Status == store.RunWaiting && r.Question != nil
}

type runIDIn struct {
	RunID string `json:"run_id"`
}

type getRunIn struct {
	RunID string `json:"run_id"`
	budgetIn
}

func (s *Server) getRunTool() server.ServerTool {
	return newTool("get_run", "Get a run",
		"Return one run: its status (queued, running, waiting, succeeded, failed, cancelled), input, result or error, the question it waits on, its steps and timestamps; stalled says why no process executes it (its owner is gone, or it is queued with no peer to start it). "+
			"A run larger than max_bytes has its largest fields cut with a marker; cut lists them, with where the whole value is (a larger max_bytes, up to the hard cap).",
		object([]string{"run_id"}, withBudget(obj{"run_id": idArg("The run's id, as launch_run or list_runs returned it.")})),
		outputSchema[runs.Run](),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in getRunIn) (*runs.Run, error) {
			rs, err := s.runsFor(in.RunID)
			if err != nil {
				return nil, err
			}
			return rs.Get(ctx, in.RunID)
		}))
}

type listRunsIn struct {
	Status string `json:"status"`
	Target string `json:"target"`
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
	budgetIn
}

func (s *Server) listRunsTool() server.ServerTool {
	return newTool("list_runs", "List runs",
		"List runs, newest first, optionally only those with one status or of one target. Pages: pass next_cursor back as cursor to continue.",
		object(nil, withBudget(obj{
			"status": enum("Only runs with this status.", "queued", "running", "waiting", "succeeded", "failed", "cancelled"),
			"target": idArg("Only runs of this workflow."),
			"limit":  integer("Most runs to return (default 20).", 1, maxRunsPage),
			"cursor": cursorArg(),
		})),
		outputSchema[runPage](),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in listRunsIn) (*runPage, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			if in.Target != "" {
				if err := validateID("target name", "target", in.Target); err != nil {
					return nil, err
				}
			}
			if in.Limit == 0 {
				in.Limit = 20
			}
			lp := runs.ListParams{Target: in.Target, Limit: in.Limit, Cursor: in.Cursor}
			if in.Status != "" {
				lp.Status = []store.RunStatus{store.RunStatus(in.Status)}
			}
			// A run too large for a page on its own comes cut, as get_run
			// cuts it, and the next page goes on after it.
			list, next, err := page.FillOrCut(in.Limit, in.room(), page.Compact, func(limit int) ([]*runs.Run, string, error) {
				lp.Limit = limit
				return rs.List(ctx, lp)
			}, func(r *runs.Run) string { return "run " + r.ID + " (read it with get_run)" },
				func(r *runs.Run, _ int) *runs.Run { return fitRun(r, in.replyBytes()) })
			if err != nil {
				return nil, err
			}
			if list == nil {
				list = []*runs.Run{}
			}
			return &runPage{Runs: list, NextCursor: next}, nil
		}))
}

type readOutputIn struct {
	RunID       string  `json:"run_id"`
	Cursor      string  `json:"cursor"`
	WaitSeconds float64 `json:"wait_seconds"`
	Limit       int     `json:"limit"`
	budgetIn
}

func (s *Server) readRunOutputTool() server.ServerTool {
	return newTool("read_run_output", "Read a run's output",
		"Read a run's output journal: the records after cursor (the run's start, step starts and ends, text the steps printed, questions, the final record with the status and result), the next_cursor to pass back, and done=true once the final record was read. "+
			"With wait_seconds > 0 and nothing new yet, the call waits up to that long for the next record: a cheap way to follow a run live. "+
			"A reply stays under max_bytes: a record too large for one reply comes in pieces (each with piece.offset and piece.size), the next pages holding the rest.",
		object([]string{"run_id"}, withBudget(obj{
			"run_id":       idArg("The run's id."),
			"cursor":       cursorArg(),
			"wait_seconds": waitArg("for a new record when none is there yet"),
			"limit":        integer("Most records to return (default 200).", 1, maxOutputPage),
		})),
		outputSchema[outputPage](),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in readOutputIn) (*outputPage, error) {
			rs, err := s.runsFor(in.RunID)
			if err != nil {
				return nil, err
			}
			wait, err := waitDuration("wait_seconds", in.WaitSeconds)
			if err != nil {
				return nil, err
			}
			if in.Limit == 0 {
				in.Limit = 200
			}
			waitCtx, cancel := transport.WaitContext(ctx)
			defer cancel()
			out, err := readOutputPage(waitCtx, rs, outputRead{RunID: in.RunID, Cursor: in.Cursor, Limit: in.Limit, Room: in.room(), Wait: wait})
			if err != nil {
				if errors.Is(err, context.Canceled) && waitCtx.Err() != nil {
					return nil, fmt.Errorf("read output of run %s: the call was cancelled: %w", in.RunID, context.Cause(waitCtx))
				}
				return nil, err
			}
			return out, nil
		}))
}

type answerIn struct {
	RunID  string `json:"run_id"`
	Answer string `json:"answer"`
}

func (s *Server) answerRunTool() server.ServerTool {
	return newTool("answer_run", "Answer a parked run",
		"Answer the question a waiting run asks (get_run shows it under question), so the run goes on. When the question lists choices, answer with one of them. The run then continues executing its remaining steps. Answering a run that is not waiting fails and says its status. "+
			"Questions for a person (question.for = human, or a step that may or may not have run) are refused: the person answers them (mcp-host answer, or the client's prompt). By default agents answer only runs they launched (policy agents.answer).",
		object([]string{"run_id", "answer"}, obj{
			"run_id": idArg("The waiting run's id."),
			"answer": str("The answer: one of the question's choices when it has some.", maxAnswerLen),
		}),
		outputSchema[runs.Run](),
		hints{destructive: true, openWorld: true},
		handler(func(ctx context.Context, _ *call, in answerIn) (*runs.Run, error) {
			rs, err := s.runsFor(in.RunID)
			if err != nil {
				return nil, err
			}
			noteSubject(ctx, in.RunID)
			by := s.principal(ctx)
			cur, err := rs.Get(ctx, in.RunID)
			if err != nil {
				return nil, err
			}
			if q := cur.Question; q != nil {
				if err := s.p.Policy.CanAnswer(by, access.Question{HumanOnly: q.HumanOnly(), Launcher: launcher(cur.Trigger)}); err != nil {
					return nil, err
				}
			}
			run, err := rs.Answer(ctx, runs.AnswerParams{RunID: in.RunID, Answer: in.Answer, By: string(by)})
			if err == nil {
				s.subs.poke()
			}
			return run, err
		}))
}

func (s *Server) cancelRunTool() server.ServerTool {
	return newTool("cancel_run", "Cancel a run",
		"Cancel a run. A queued or waiting run is cancelled at once; a running one is stopped by the process executing it within about a second (its current step's processes are terminated), and the returned run shows cancel_requested until then. Settled runs cannot be cancelled.",
		object([]string{"run_id"}, obj{"run_id": idArg("The run's id.")}),
		outputSchema[runs.Run](),
		hints{destructive: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in runIDIn) (*runs.Run, error) {
			rs, err := s.runsFor(in.RunID)
			if err != nil {
				return nil, err
			}
			noteSubject(ctx, in.RunID)
			run, err := rs.Cancel(ctx, in.RunID)
			if err == nil {
				s.subs.poke()
			}
			return run, err
		}))
}

// launcher is the principal that launched a run: its recorded
// principal, else (runs from before principals) the MCP client's agent,
// else a person.
func launcher(t store.Trigger) access.Principal {
	switch {
	case t.Principal != "":
		return access.Of(t.Principal)
	case t.Kind == "mcp":
		return access.Agent(t.Client)
	}
	return access.Human
}

// runsFor is the run engine, for a call about the run id (validated).
func (s *Server) runsFor(id string) (runEngine, error) {
	rs, err := s.runs()
	if err != nil {
		return nil, err
	}
	return rs, validateID("run id", "run_id", id)
}
