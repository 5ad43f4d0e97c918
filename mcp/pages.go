package mcp

import (
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/store"
)

// automationKey sorts automations as the store lists them: by owner, then
// key. A space is in neither.
func automationKey(a *automation) string { return a.Owner + " " + a.Key }

// parseAutomationCursor reads a cursor automationKey made (nil: none).
func parseAutomationCursor(cursor string) (*store.AutomationPosition, error) {
	pos, err := automations.ParseCursor(cursor)
	if err != nil {
		return nil, &argumentError{Name: "cursor", Reason: "invalid cursor: pass back a next_cursor this tool returned"}
	}
	return pos, nil
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
	n, _, _ := page.Fit(problems, room-64)
	if n == len(problems) {
		return problems
	}
	return append(problems[:n:n], fmt.Sprintf("… and %d more problems: run mcp-host list to see them all", len(problems)-n))
}
