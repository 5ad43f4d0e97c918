package automations

import (
	"errors"
	"strings"

	"github.com/cairnhq/cairn/store"
)

// A listing of automations pages by (owner, key), the store's order; a
// cursor is the last item's owner and key with a space between (neither
// holds one), so a page continues exactly after it.

// ErrInvalidCursor is a cursor no listing returned.
var ErrInvalidCursor = errors.New("invalid cursor: pass back a next cursor a listing returned")

// Cursor is the cursor that continues a listing after a.
func Cursor(a *store.Automation) string { return a.Owner + " " + a.Key }

// ParseCursor reads a Cursor ("": nil, the start).
func ParseCursor(cursor string) (*store.AutomationPosition, error) {
	if cursor == "" {
		return nil, nil
	}
	owner, key, ok := strings.Cut(cursor, " ")
	if !ok || owner == "" || strings.ContainsAny(cursor, "\x00\n") {
		return nil, ErrInvalidCursor
	}
	return &store.AutomationPosition{Owner: owner, Key: key}, nil
}
