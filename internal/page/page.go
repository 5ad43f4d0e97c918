// Package page cuts lists into pages that stay under a byte budget of
// JSON, for every surface that hands a list to a reader with a limit: MCP
// replies (agent clients refuse a tool result over some tens of thousands
// of tokens) and the CLI's --json pages. A page ends before the item that
// would not fit, and its cursor continues exactly there.
package page

import (
	"encoding/json"
	"fmt"
)

// Budgets of a page, in bytes of JSON.
const (
	// DefaultBytes is the budget when the reader asks for none.
	DefaultBytes = 64 << 10
	// MaxBytes is the largest budget a reader may ask for.
	MaxBytes = 1 << 20
	// MinBytes is the smallest: a page must hold a useful piece.
	MinBytes = 8 << 10
	// Reserve is kept out of the room for items: an envelope, the page's
	// own fields and a summary line.
	Reserve = 1 << 10
)

// Bytes is the budget a reader asked for (0 or less: the default),
// clamped to MinBytes..MaxBytes.
func Bytes(asked int) int {
	if asked <= 0 {
		return DefaultBytes
	}
	return min(max(asked, MinBytes), MaxBytes)
}

// Room is what the items of a page with the budget asked for may take.
func Room(asked int) int { return Bytes(asked) - Reserve }

// Fit returns how many of items, from the first, fit in room bytes of
// JSON, with the bytes they take (each item's encoding and a comma).
func Fit[T any](items []T, room int) (int, int, error) {
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

// TooLargeError is an item that alone does not fit in a page's budget.
// Arg names the budget's argument in the message ("max_bytes" when
// empty; the CLI says "--max-bytes").
type TooLargeError struct {
	What string
	Size int
	Arg  string
}

func (e *TooLargeError) Error() string {
	arg := e.Arg
	if arg == "" {
		arg = "max_bytes"
	}
	return fmt.Sprintf("%s takes %d bytes of JSON, more than %s allows: pass a larger %s (at most %d)", e.What, e.Size, arg, arg, MaxBytes)
}

// Fill fetches a page of at most limit items and shortens it until its
// items fit in room. fetch returns the items after the caller's cursor and
// the cursor after the last of them; a shorter page is fetched again so
// its cursor continues exactly after its last item. what names an item in
// the error when the first one alone does not fit.
func Fill[T any](limit, room int, fetch func(limit int) ([]T, string, error), what func(T) string) ([]T, string, error) {
	for {
		items, next, err := fetch(limit)
		if err != nil {
			return nil, "", err
		}
		n, _, err := Fit(items, room)
		if err != nil {
			return nil, "", err
		}
		if n == len(items) {
			return items, next, nil
		}
		if n == 0 {
			return nil, "", &TooLargeError{What: what(items[0]), Size: JSONLen(items[0])}
		}
		limit = n
	}
}

// Slice is a page of a sorted list held whole: the items after cursor (a
// sort key), at most limit, that fit in room bytes of JSON, and the cursor
// after the last. The cursor is the last item's key, so a page continues
// exactly after it even when items were added or removed since.
func Slice[T any](items []T, key func(T) string, cursor string, limit, room int, what func(T) string) ([]T, string, error) {
	start := 0
	if cursor != "" {
		for start < len(items) && key(items[start]) <= cursor {
			start++
		}
	}
	end := min(start+limit, len(items))
	n, _, err := Fit(items[start:end], room)
	if err != nil {
		return nil, "", err
	}
	if n == 0 && start < end {
		return nil, "", &TooLargeError{What: what(items[start]), Size: JSONLen(items[start])}
	}
	pg := items[start : start+n]
	next := ""
	if start+n < len(items) {
		next = key(pg[len(pg)-1])
	}
	return pg, next, nil
}

// JSONLen is the length of v's JSON encoding (0 when it has none).
func JSONLen(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}
