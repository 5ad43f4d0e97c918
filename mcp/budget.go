package mcp

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Every paged reply stays under a byte budget, because agent clients refuse
// a tool result over some tens of thousands of tokens. The budget covers
// the whole result: its structured content and its text block.
const (
	// DefaultReplyBytes is the budget of a reply when the call gives no
	// max_bytes.
	DefaultReplyBytes = 64 << 10
	// MaxReplyBytes is the largest max_bytes a call may ask for.
	MaxReplyBytes = 1 << 20
	// minReplyBytes is the smallest: a page must hold a useful piece.
	minReplyBytes = 8 << 10
	// replyReserve is kept out of the room for items: the JSON-RPC
	// envelope, the page's own fields and the summary text.
	replyReserve = 1 << 10
)

// budgetIn is the max_bytes argument of the paged tools. Embedded in a
// tool's arguments, it tells the handler the reply's budget.
type budgetIn struct {
	MaxBytes int `json:"max_bytes"`
}

// replyBytes is the budget the call asked for, or the default.
func (b budgetIn) replyBytes() int {
	if b.MaxBytes <= 0 {
		return DefaultReplyBytes
	}
	return min(max(b.MaxBytes, minReplyBytes), MaxReplyBytes)
}

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

// fitItems returns how many of items, from the first, fit in room bytes
// of JSON, with the bytes they take (each item's encoding and a comma).
func fitItems[T any](items []T, room int) (int, int, error) {
	used := 0
	for i, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return 0, 0, fmt.Errorf("encode result: %w", err)
		}
		if used+len(b)+1 > room {
			return i, used, nil
		}
		used += len(b) + 1
	}
	return len(items), used, nil
}

// tooLargeError is an item that alone does not fit in the reply's budget.
type tooLargeError struct {
	What string
	Size int
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s takes %d bytes of JSON, more than max_bytes allows: pass a larger max_bytes (at most %d)", e.What, e.Size, MaxReplyBytes)
}

// fitPage fetches a page of at most limit items and shortens it until its
// items fit in room. fetch returns the items after the caller's cursor and
// the cursor after the last of them; a shorter page is fetched again so
// its cursor continues exactly after its last item. what names an item in
// the error when the first one alone does not fit.
func fitPage[T any](limit, room int, fetch func(limit int) ([]T, string, error), what func(T) string) ([]T, string, error) {
	for {
		items, next, err := fetch(limit)
		if err != nil {
			return nil, "", err
		}
		n, _, err := fitItems(items, room)
		if err != nil {
			return nil, "", err
		}
		if n == len(items) {
			return items, next, nil
		}
		if n == 0 {
			b, _ := json.Marshal(items[0])
			return nil, "", &tooLargeError{What: what(items[0]), Size: len(b)}
		}
		limit = n
	}
}

// cutJSONString returns the longest prefix of s, cut at a rune boundary,
// whose JSON string encoding takes at most room bytes (quotes excluded).
func cutJSONString(s string, room int) string {
	used := 0
	for i, r := range s {
		w := jsonRuneLen(r, s[i:])
		if used+w > room {
			return s[:i]
		}
		used += w
	}
	return s
}

// jsonRuneLen is how many bytes encoding/json writes for rune r (which
// starts rest), HTML escaping included.
func jsonRuneLen(r rune, rest string) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == '\u2028' || r == '\u2029':
		return 6
	case r == utf8.RuneError:
		if _, n := utf8.DecodeRuneInString(rest); n == 1 {
			return 6 // an invalid byte becomes \ufffd
		}
	}
	return utf8.RuneLen(r)
}
