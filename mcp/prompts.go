package mcp

import (
	"context"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// Prompts make Cairn usable as slash commands (/run, /schedule, /status):
// each returns a user message telling the agent which tools to call, with
// what the server knows filled in.

// statusRuns bounds the runs the status prompt lists per status.
const statusRuns = 10

func (s *Server) addPrompts() {
	s.mcp.AddPrompt(mcpgo.NewPrompt("run",
		mcpgo.WithPromptTitle("Run a workflow"),
		mcpgo.WithPromptDescription("Launch a workflow target with its input, follow it to its end and report the result."),
		mcpgo.WithArgument("target", mcpgo.ArgumentDescription("The workflow to launch (list_targets shows them)."), mcpgo.RequiredArgument()),
		mcpgo.WithArgument("input", mcpgo.ArgumentDescription(`The run's input as a JSON object, e.g. {"who": "me"}; omit for none.`)),
	), s.runPrompt)
	s.mcp.AddPrompt(mcpgo.NewPrompt("schedule",
		mcpgo.WithPromptTitle("Schedule a workflow"),
		mcpgo.WithPromptDescription("Turn a schedule described in words into an automation that fires a target."),
		mcpgo.WithArgument("target", mcpgo.ArgumentDescription("The workflow the automation fires."), mcpgo.RequiredArgument()),
		mcpgo.WithArgument("when", mcpgo.ArgumentDescription(`When it fires, in words: "every weekday at 9", "every 30 minutes", "when src/ changes".`), mcpgo.RequiredArgument()),
		mcpgo.WithArgument("key", mcpgo.ArgumentDescription("The automation's key (an existing key updates that automation); default: the target's name.")),
	), s.schedulePrompt)
	s.mcp.AddPrompt(mcpgo.NewPrompt("status",
		mcpgo.WithPromptTitle("Cairn status"),
		mcpgo.WithPromptDescription("What runs, what waits for an answer and what failed recently."),
	), s.statusPrompt)
}

func userPrompt(desc, msg string) *mcpgo.GetPromptResult {
	return mcpgo.NewGetPromptResult(desc, []mcpgo.PromptMessage{mcpgo.NewPromptMessage(mcpgo.RoleUser, mcpgo.NewTextContent(msg))})
}

// promptArg is a prompt argument, refused when required and missing.
func promptArg(req mcpgo.GetPromptRequest, name string, required bool) (string, error) {
	v := strings.TrimSpace(req.Params.Arguments[name])
	if v == "" && required {
		return "", fmt.Errorf("prompt %s: argument %q is required", req.Params.Name, name)
	}
	return v, nil
}

func (s *Server) runPrompt(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
	target, err := promptArg(req, "target", true)
	if err != nil {
		return nil, err
	}
	input, _ := promptArg(req, "input", false)
	var b strings.Builder
	fmt.Fprintf(&b, "Launch the Cairn workflow %q", target)
	if rs, err := s.runs(); err == nil {
		if wf, err := rs.Targets().Target(target); err == nil && wf.Description != "" {
			fmt.Fprintf(&b, " (%s)", text.Shorten(wf.Description, 200))
		} else if err != nil {
			fmt.Fprintf(&b, " (note: %s; check list_targets)", text.Shorten(err.Error(), 200))
		}
	}
	if input != "" {
		fmt.Fprintf(&b, " with input %s", text.Shorten(input, 4000))
	}
	b.WriteString(".\nCall launch_run with wait_seconds 30. If the run is still going, follow it with read_run_output (pass next_cursor back, wait_seconds 30) until done. " +
		"If it waits on a question, show me the question and its choices and answer with answer_run only once I replied. " +
		"Then tell me its status and result, or its error and what to do about it.")
	return userPrompt("Run "+target, b.String()), nil
}

func (s *Server) schedulePrompt(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
	target, err := promptArg(req, "target", true)
	if err != nil {
		return nil, err
	}
	when, err := promptArg(req, "when", true)
	if err != nil {
		return nil, err
	}
	key, _ := promptArg(req, "key", false)
	if key == "" {
		key = target
	}
	msg := fmt.Sprintf("Create a Cairn automation with key %q that fires the workflow %q %s.\n", key, target, text.Shorten(when, 500)) +
		`Translate the schedule into exactly one trigger of create_automation: cron (five fields, with tz set to my IANA time zone, e.g. "0 9 * * 1-5" for weekdays at 9), ` +
		`every (an interval such as "30m", measured from the previous run's end), files (workspace globs such as ["src/**/*.go"]) or url (polled). ` +
		"If the schedule is ambiguous, ask me first. Then show me the automation's next due time from the answer."
	return userPrompt("Schedule "+target, msg), nil
}

func (s *Server) statusPrompt(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
	var b strings.Builder
	b.WriteString("Here is what Cairn knows now. Summarize it for me: what runs, what waits for my answer (with the question), and what failed and why; suggest the next step for each.\n")
	rs, err := s.runs()
	if err != nil {
		b.WriteString("\n(runs are not available: " + err.Error() + ")\n")
		return userPrompt("Cairn status", b.String()), nil
	}
	for _, st := range []store.RunStatus{store.RunRunning, store.RunWaiting, store.RunFailed} {
		list, _, err := rs.List(ctx, runs.ListParams{Status: []store.RunStatus{st}, Limit: statusRuns})
		if err != nil {
			return nil, fmt.Errorf("prompt status: list %s runs: %w", st, err)
		}
		fmt.Fprintf(&b, "\n%s runs (%d shown, newest first):\n", st, len(list))
		for _, r := range list {
			fmt.Fprintf(&b, "- %s %s, updated %s", r.ID, r.Target, r.UpdatedAt.Format("2006-01-02 15:04:05 MST"))
			if r.Question != nil {
				fmt.Fprintf(&b, ", asks %q", text.Shorten(r.Question.Text, 200))
			}
			if r.Error != "" {
				fmt.Fprintf(&b, ", error: %s", text.Shorten(r.Error, 300))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nFor more, call list_runs, get_run or read_run_output.")
	return userPrompt("Cairn status", b.String()), nil
}
