package mcp

import (
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/store"
)

// Paging over a list the server holds whole (automations, targets): the
// cursor is the sort key of the last item returned, so a page continues
// exactly after it even when items were added or removed since.

// listPage is a page of a sorted list: the items after cursor, at most
// limit, that fit in room bytes of JSON, and the cursor after the last.
func listPage[T any](items []T, key func(T) string, cursor string, limit, room int, what func(T) string) ([]T, string, error) {
	start := 0
	if cursor != "" {
		for start < len(items) && key(items[start]) <= cursor {
			start++
		}
	}
	end := min(start+limit, len(items))
	n, _, err := fitItems(items[start:end], room)
	if err != nil {
		return nil, "", err
	}
	if n == 0 && start < end {
		return nil, "", &tooLargeError{What: what(items[start]), Size: jsonLen(items[start])}
	}
	page := items[start : start+n]
	next := ""
	if start+n < len(items) {
		next = key(page[len(page)-1])
	}
	return page, next, nil
}

// automationKey sorts automations as the store lists them: by owner, then
// key. A space is in neither.
func automationKey(a *automation) string { return a.Owner + " " + a.Key }

// parseAutomationCursor reads a cursor automationKey made (nil: none).
func parseAutomationCursor(cursor string) (*store.AutomationPosition, error) {
	if cursor == "" {
		return nil, nil
	}
	owner, key, ok := strings.Cut(cursor, " ")
	if err := checkListCursor(cursor); err != nil || !ok || owner == "" {
		return nil, &argumentError{Name: "cursor", Reason: "invalid cursor: pass back a next_cursor this tool returned"}
	}
	return &store.AutomationPosition{Owner: owner, Key: key}, nil
}

// checkListCursor refuses a cursor that is not a sort key.
func checkListCursor(cursor string) error {
	if strings.ContainsAny(cursor, "\x00\n") {
		return &argumentError{Name: "cursor", Reason: "invalid cursor: pass back a next_cursor this tool returned"}
	}
	return nil
}

func (p *automationsOut) summary() string {
	return fmt.Sprintf("%d automations; next_cursor %q continues.", len(p.Automations), p.NextCursor)
}

func (p *targetList) summary() string {
	return fmt.Sprintf("%d targets; next_cursor %q continues.", len(p.Targets), p.NextCursor)
}

func (p *runPage) summary() string {
	return fmt.Sprintf("%d runs; next_cursor %q continues.", len(p.Runs), p.NextCursor)
}

func (p *sessionPage) summary() string {
	return fmt.Sprintf("%d sessions; next_cursor %q continues.", len(p.Sessions), p.NextCursor)
}

func (p *sessionRead) summary() string {
	return fmt.Sprintf("Session %s with %d messages; next_cursor %q continues.", p.Session.ID, len(p.Messages), p.NextCursor)
}

// fitProblems keeps the load problems that fit in room bytes, saying how
// many were left out.
func fitProblems(problems []string, room int) []string {
	n, _, _ := fitItems(problems, room-64)
	if n == len(problems) {
		return problems
	}
	return append(problems[:n:n], fmt.Sprintf("… and %d more problems: run mcp-host list to see them all", len(problems)-n))
}
