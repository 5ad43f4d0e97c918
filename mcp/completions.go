package mcp

import (
	"context"
	"sort"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/runs"
)

// maxCompletions is the most values a completion answers (the spec's cap).
const maxCompletions = 100

// completer answers completion/complete: target names and automation
// keys for prompt arguments, run ids for the resource templates' run_id.
type completer struct{ s *Server }

func (c completer) CompletePromptArgument(ctx context.Context, prompt string, arg mcpgo.CompleteArgument, _ mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	switch {
	case arg.Name == "target":
		return c.targets(arg.Value), nil
	case prompt == "schedule" && arg.Name == "key":
		return c.keys(ctx, arg.Value), nil
	}
	return &mcpgo.Completion{Values: []string{}}, nil
}

func (c completer) CompleteResourceArgument(ctx context.Context, _ string, arg mcpgo.CompleteArgument, _ mcpgo.CompleteContext) (*mcpgo.Completion, error) {
	if arg.Name != "run_id" {
		return &mcpgo.Completion{Values: []string{}}, nil
	}
	rs, err := c.s.runs()
	if err != nil {
		return &mcpgo.Completion{Values: []string{}}, nil
	}
	var ids []string
	cursor := ""
	for range 5 { // newest first, a few pages at most
		list, next, err := rs.List(ctx, runs.ListParams{Limit: 200, Cursor: cursor})
		if err != nil {
			break
		}
		for _, r := range list {
			ids = append(ids, r.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	return completion(ids, arg.Value, false), nil
}

func (c completer) targets(prefix string) *mcpgo.Completion {
	rs, err := c.s.runs()
	if err != nil {
		return &mcpgo.Completion{Values: []string{}}
	}
	all, _ := rs.Targets().List()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	return completion(names, prefix, true)
}

func (c completer) keys(ctx context.Context, prefix string) *mcpgo.Completion {
	as, err := c.s.automations()
	if err != nil {
		return &mcpgo.Completion{Values: []string{}}
	}
	list, err := as.List(ctx, automations.ListParams{})
	if err != nil {
		return &mcpgo.Completion{Values: []string{}}
	}
	seen := map[string]bool{}
	var keys []string
	for _, a := range list {
		if !seen[a.Key] {
			seen[a.Key] = true
			keys = append(keys, a.Key)
		}
	}
	return completion(keys, prefix, true)
}

// completion is the values starting with prefix, at most maxCompletions
// (sorted when sorted is set, else in the order given).
func completion(values []string, prefix string, sorted bool) *mcpgo.Completion {
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	if sorted {
		sort.Strings(out)
	}
	total := len(out)
	if len(out) > maxCompletions {
		out = out[:maxCompletions]
	}
	if out == nil {
		out = []string{}
	}
	return &mcpgo.Completion{Values: out, Total: total, HasMore: total > len(out)}
}
