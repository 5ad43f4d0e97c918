package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/mcp/transport"
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

func (s *Server) runs() (RunService, error) {
	if s.p.Runs == nil {
		return nil, &unavailableError{"runs"}
	}
	return s.p.Runs, nil
}

// fingerprint is the version of a run's resources, for subscriptions.
func (s *Server) fingerprint(ctx context.Context, id string) (fingerprint, error) {
	rs, err := s.runs()
	if err != nil {
		return fingerprint{}, err
	}
	v, err := rs.Version(ctx, id)
	if err != nil {
		return fingerprint{}, err
	}
	return fingerprint{record: v.Record, output: v.Output, settled: v.Settled}, nil
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

func (s *Server) listTargetsTool() server.ServerTool {
	return newTool("list_targets", "List launchable workflows",
		"List the workflows this workspace defines (.cairn/workflows/*.yaml) that launch_run can start, each with its description, the JSON Schema of its input and the automations its file declares; problems lists workflow files that failed to load, with file, line and field.",
		object(nil, obj{}),
		outObject([]string{"targets"}, obj{
			"targets": outArray(outObject([]string{"name"}, obj{
				"name": outString, "description": outString, "input_schema": outAny, "triggers": outStrList,
			})),
			"problems": outStrList,
		}),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, _ struct{}) (*TargetList, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			tl, err := rs.Targets(ctx)
			if err != nil {
				return nil, err
			}
			if tl.Targets == nil {
				tl.Targets = []Target{}
			}
			return tl, nil
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
		runSchema(),
		hints{destructive: true, openWorld: true},
		handler(func(ctx context.Context, c *call, in launchIn) (*Run, error) {
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
			run, err := rs.Launch(ctx, LaunchParams{Target: in.Target, Input: in.Input, Client: s.clientName(ctx)})
			if err != nil {
				return nil, err
			}
			s.subs.poke()
			if wait <= 0 {
				return run, nil
			}
			waitCtx, cancel := transport.WaitContext(ctx)
			defer cancel()
			return s.awaitRun(waitCtx, c, run, wait)
		}))
}

// awaitRun follows a run's journal until the run settles or parks, or
// wait passes, sending a progress notification per batch of records, and
// returns the run as it is then. The caller's cancellation ends the wait
// early without failing the call: the run is returned as it is.
func (s *Server) awaitRun(ctx context.Context, c *call, run *Run, wait time.Duration) (*Run, error) {
	rs := s.p.Runs
	deadline := time.Now().Add(wait)
	cursor := ""
	seen := 0
	c.Progress(ctx, 0, fmt.Sprintf("run %s %s", run.ID, run.Status))
	for {
		if run.Settled() || run.Status == "waiting" && run.Question != nil {
			return run, nil
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return run, nil
		}
		page, err := rs.ReadOutput(ctx, ReadOutputParams{RunID: run.ID, Cursor: cursor, Limit: maxOutputPage, Wait: min(left, time.Second)})
		if err != nil {
			if ctx.Err() != nil {
				return run, nil
			}
			return nil, err
		}
		cursor = page.NextCursor
		if n := len(page.Records); n > 0 {
			seen += n
			c.Progress(ctx, 0, fmt.Sprintf("run %s: %d output records", run.ID, seen))
		}
		latest, err := rs.Get(ctx, run.ID)
		if err != nil {
			if ctx.Err() != nil {
				return run, nil
			}
			return nil, err
		}
		if latest.Status != run.Status {
			c.Progress(ctx, 0, fmt.Sprintf("run %s %s", run.ID, latest.Status))
		}
		run = latest
	}
}

type runIDIn struct {
	RunID string `json:"run_id"`
}

func (s *Server) getRunTool() server.ServerTool {
	return newTool("get_run", "Get a run",
		"Return one run: its status (queued, running, waiting, succeeded, failed, cancelled), input, result or error, the question it waits on, its steps and timestamps.",
		object([]string{"run_id"}, obj{"run_id": idArg("The run's id, as launch_run or list_runs returned it.")}),
		runSchema(),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in runIDIn) (*Run, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			if err := validateID("run id", "run_id", in.RunID); err != nil {
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
}

func (s *Server) listRunsTool() server.ServerTool {
	return newTool("list_runs", "List runs",
		"List runs, newest first, optionally only those with one status or of one target. Pages: pass next_cursor back as cursor to continue.",
		object(nil, obj{
			"status": enum("Only runs with this status.", "queued", "running", "waiting", "succeeded", "failed", "cancelled"),
			"target": idArg("Only runs of this workflow."),
			"limit":  integer("Most runs to return (default 20).", 1, maxRunsPage),
			"cursor": cursorArg(),
		}),
		outObject([]string{"runs"}, obj{"runs": outArray(runSchema()), "next_cursor": outString}),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in listRunsIn) (*RunPage, error) {
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
			page, err := rs.List(ctx, ListRunsParams{Status: in.Status, Target: in.Target, Limit: in.Limit, Cursor: in.Cursor})
			if err != nil {
				return nil, err
			}
			if page.Runs == nil {
				page.Runs = []*Run{}
			}
			return page, nil
		}))
}

type readOutputIn struct {
	RunID       string  `json:"run_id"`
	Cursor      string  `json:"cursor"`
	WaitSeconds float64 `json:"wait_seconds"`
	Limit       int     `json:"limit"`
}

func (s *Server) readRunOutputTool() server.ServerTool {
	return newTool("read_run_output", "Read a run's output",
		"Read a run's output journal: the records after cursor (the run's start, step starts and ends, text the steps printed, questions, the final record with the status and result), the next_cursor to pass back, and done=true once the final record was read. "+
			"With wait_seconds > 0 and nothing new yet, the call waits up to that long for the next record: a cheap way to follow a run live.",
		object([]string{"run_id"}, obj{
			"run_id":       idArg("The run's id."),
			"cursor":       cursorArg(),
			"wait_seconds": waitArg("for a new record when none is there yet"),
			"limit":        integer("Most records to return (default 200).", 1, maxOutputPage),
		}),
		outObject([]string{"run_id", "records", "next_cursor", "done"}, obj{
			"run_id": outString, "records": outArray(outAnyObj), "next_cursor": outString, "done": outBool, "status": outString,
			"owner_gone": outInt,
		}),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in readOutputIn) (*OutputPage, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			if err := validateID("run id", "run_id", in.RunID); err != nil {
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
			page, err := rs.ReadOutput(waitCtx, ReadOutputParams{RunID: in.RunID, Cursor: in.Cursor, Limit: in.Limit, Wait: wait})
			if err != nil {
				if errors.Is(err, context.Canceled) && waitCtx.Err() != nil {
					return nil, fmt.Errorf("read output of run %s: the call was cancelled: %w", in.RunID, context.Cause(waitCtx))
				}
				return nil, err
			}
			if page.Records == nil {
				page.Records = []json.RawMessage{}
			}
			return page, nil
		}))
}

type answerIn struct {
	RunID  string `json:"run_id"`
	Answer string `json:"answer"`
}

func (s *Server) answerRunTool() server.ServerTool {
	return newTool("answer_run", "Answer a parked run",
		"Answer the question a waiting run asks (get_run shows it under question), so the run goes on. When the question lists choices, answer with one of them. The run then continues executing its remaining steps. Answering a run that is not waiting fails and says its status.",
		object([]string{"run_id", "answer"}, obj{
			"run_id": idArg("The waiting run's id."),
			"answer": str("The answer: one of the question's choices when it has some.", maxAnswerLen),
		}),
		runSchema(),
		hints{destructive: true, openWorld: true},
		handler(func(ctx context.Context, _ *call, in answerIn) (*Run, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			if err := validateID("run id", "run_id", in.RunID); err != nil {
				return nil, err
			}
			run, err := rs.Answer(ctx, in.RunID, in.Answer)
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
		runSchema(),
		hints{destructive: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in runIDIn) (*Run, error) {
			rs, err := s.runs()
			if err != nil {
				return nil, err
			}
			if err := validateID("run id", "run_id", in.RunID); err != nil {
				return nil, err
			}
			run, err := rs.Cancel(ctx, in.RunID)
			if err == nil {
				s.subs.poke()
			}
			return run, err
		}))
}
