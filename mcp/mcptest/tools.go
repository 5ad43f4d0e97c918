package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
)

// CairnTools are the tools Cairn's server lists, for tests that check
// the list is complete.
var CairnTools = []string{
	"list_targets", "launch_run", "get_run", "list_runs", "read_run_output", "answer_run", "cancel_run",
	"list_automations", "create_automation", "update_automation", "delete_automation", "trigger_automation",
	"list_sessions", "get_session", "create_session", "append_session_messages", "compact_session", "delete_session",
}

// Tool is a tool as tools/list describes it.
type Tool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  map[string]any  `json:"annotations"`
}

// ListTools calls tools/list (one page: Cairn's server does not page its
// tools). A JSON-RPC error is returned as *RPCError.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	m, err := c.Call(ctx, "tools/list", nil)
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		return nil, m.Error
	}
	var res struct {
		Tools []Tool `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return nil, fmt.Errorf("decode tools/list result: %w", err)
	}
	return res.Tools, nil
}

// ToolResult is a tools/call result.
type ToolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// Text is the text of the result's first content item.
func (r *ToolResult) Text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

// CallTool calls a tool. meta, when not nil, is sent as params._meta (a
// progress token, say). A JSON-RPC error is returned as *RPCError.
func (c *Client) CallTool(ctx context.Context, name string, args any, meta map[string]any) (*ToolResult, Message, error) {
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	if meta != nil {
		params["_meta"] = meta
	}
	m, err := c.Call(ctx, "tools/call", params)
	if err != nil {
		return nil, m, err
	}
	r, err := DecodeToolResult(m)
	return r, m, err
}

// DecodeToolResult decodes a tools/call response (one from Request and
// Await, say). A JSON-RPC error is returned as *RPCError.
func DecodeToolResult(m Message) (*ToolResult, error) {
	if m.Error != nil {
		return nil, m.Error
	}
	var r ToolResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return nil, fmt.Errorf("decode tool result: %w", err)
	}
	return &r, nil
}
