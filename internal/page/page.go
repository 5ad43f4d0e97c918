// Package page cuts lists into pages that stay under a byte budget of
// JSON, for every surface that hands a list to a reader with a limit: MCP
// replies (agent clients refuse a tool result over some tens of thousands
// of tokens) and the CLI's --json pages. A page ends before the item that
// would not fit, and its cursor continues exactly there.
package page

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// A Sizer says how many bytes an item takes in a page, separator
// included.
type Sizer func(v any) (int, error)

// Compact sizes an item as compact JSON and a comma: the MCP wire form.
func Compact(v any) (int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode result: %w", err)
	}
	return len(b) + 1, nil
}

// Indented sizes an item of a list printed with a two-space indent at
// depth (json.MarshalIndent with prefix and indent "  "): its lines, its
// leading indent, a comma and a newline.
func Indented(depth int) Sizer {
	prefix := strings.Repeat("  ", depth)
	return func(v any) (int, error) {
		b, err := json.MarshalIndent(v, prefix, "  ")
		if err != nil {
			return 0, fmt.Errorf("encode result: %w", err)
		}
		return len(prefix) + len(b) + 2, nil
	}
}

// Fit returns how many of items, from the first, fit in room bytes of
// JSON, with the bytes they take (each item's encoding and a comma).
func Fit[T any](items []T, room int) (int, int, error) { return FitSized(items, room, Compact) }

// FitSized is Fit with items sized by size.
func FitSized[T any](items []T, room int, size Sizer) (int, int, error) {
	used := 0
	for i, it := range items {
		n, err := size(it)
		if err != nil {
			return 0, 0, err
		}
		if used+n > room {
			return i, used, nil
		}
		used += n
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
	return FillSized(limit, room, Compact, fetch, what)
}

// FillSized is Fill with items sized by size.
func FillSized[T any](limit, room int, size Sizer, fetch func(limit int) ([]T, string, error), what func(T) string) ([]T, string, error) {
	for {
		items, next, err := fetch(limit)
		if err != nil {
			return nil, "", err
		}
		n, _, err := FitSized(items, room, size)
		if err != nil {
			return nil, "", err
		}
		if n == len(items) {
			return items, next, nil
		}
		if n == 0 {
			sz, _ := size(items[0])
			return nil, "", &TooLargeError{What: what(items[0]), Size: sz}
		}
		limit = n
	}
}

// FillOrCut is FillSized, except that an item too large for a page on
// its own does not stop the listing: it comes alone, as cut returns it
// (given the item and the bytes its JSON takes; the caller makes it fit
// room), and the cursor goes past it.
func FillOrCut[T any](limit, room int, size Sizer, fetch func(limit int) ([]T, string, error), what func(T) string, cut func(T, int) T) ([]T, string, error) {
	items, next, err := FillSized(limit, room, size, fetch, what)
	var tooLarge *TooLargeError
	if !errors.As(err, &tooLarge) {
		return items, next, err
	}
	one, next, err := fetch(1)
	if err != nil || len(one) == 0 {
		return nil, "", err
	}
	return []T{cut(one[0], tooLarge.Size)}, next, nil
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
