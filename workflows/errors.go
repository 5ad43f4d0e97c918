package workflows

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/internal/text"
)

// Error is one problem found while loading a workflow file. It names the
// file, the line (0 when unknown) and the field ("step \"greet\": exec[1]").
// Parse returns one Error, or several joined with errors.Join; use
// errors.As to reach the first one.
type Error struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNotFound is matched (errors.Is) by a *NotFoundError.
var ErrNotFound = errors.New("workflow not found")

// NotFoundError says that no workflow file defines the name.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("no workflow named %q", shorten(e.Name)) }

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// InputError says why an input was refused by ValidateInput. Problems are
// worded "/who: expected string, got number" (JSON pointer, then reason),
// or just the reason for the object itself.
type InputError struct{ Problems []string }

func (e *InputError) Error() string { return "input: " + strings.Join(e.Problems, "; ") }

// shorten keeps hostile names readable in messages: 40 runes at most.
func shorten(s string) string { return text.Shorten(s, 40) }

// maxProblems bounds the number of problems reported for one file.
const maxProblems = 20
