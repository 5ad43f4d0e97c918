package mcp

import (
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/internal/page"
)

// Every paged reply stays under a byte budget, because agent clients refuse
// a tool result over some tens of thousands of tokens. The budget covers
// the whole result: its structured content and its text block.
// The budgets are package page's, shared with the CLI's --json pages.
const (
	// DefaultReplyBytes is the budget of a reply when the call gives no
	// max_bytes.
	DefaultReplyBytes = page.DefaultBytes
	// MaxReplyBytes is the largest max_bytes a call may ask for.
	MaxReplyBytes = page.MaxBytes
	// minReplyBytes is the smallest: a page must hold a useful piece.
	minReplyBytes = page.MinBytes
	// replyReserve is kept out of the room for items: the JSON-RPC
	// envelope, the page's own fields and the summary text.
	replyReserve = page.Reserve
)

// budgetIn is the max_bytes argument of the paged tools. Embedded in a
// tool's arguments, it tells the handler the reply's budget.
type budgetIn struct {
	MaxBytes int `json:"max_bytes"`
}

// replyBytes is the budget the call asked for, or the default.
func (b budgetIn) replyBytes() int { return page.Bytes(b.MaxBytes) }

// room is what the page's items may take.
func (b budgetIn) room() int { return b.replyBytes() - replyReserve }

// budgeted is arguments that carry a budget (they embed budgetIn).
type budgeted interface{ replyBytes() int }

// summarized is a reply that says in one line what it holds, for the text
// block of a reply too large to repeat there as JSON.
type summarized interface{ summary() string }

func maxBytesArg() obj {
	return integer(fmt.Sprintf("Most bytes of JSON the reply may take (default %d, at most %d); the page stops before it and next_cursor continues exactly there.", DefaultReplyBytes, MaxReplyBytes), minReplyBytes, MaxReplyBytes)
}

// withBudget adds the max_bytes argument to a paged tool's properties.
func withBudget(p obj) obj {
	p["max_bytes"] = maxBytesArg()
	return p
}

// textFor is the text block of a reply whose structured content is b: the
// same JSON when both fit in budget (the MCP spec asks for it, for
// clients that read only text), else a one-line summary.
func textFor(v any, b []byte, budget int) string {
	if 2*len(b)+replyReserve <= budget {
		if enc, err := json.Marshal(string(b)); err == nil && len(b)+len(enc)+replyReserve/2 <= budget {
			return string(b)
		}
	}
	line := fmt.Sprintf("The reply is %d bytes of JSON: structuredContent holds it.", len(b))
	if s, ok := v.(summarized); ok {
		line = s.summary() + " " + line
	}
	return line
}
