package mcp

import (
	"encoding/json"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/internal/ids"
)

// Input bounds. The schemas publish them; the handlers rely on the
// server's schema validation and check ids again with ids.Validate.
const (
	maxIDLen           = ids.MaxLen
	maxCursorLen       = 512
	maxWaitSeconds     = 60
	maxAnswerLen       = 16 << 10
	maxTitleLen        = 512
	maxNoteLen         = 2048
	maxInputProps      = 256
	maxMessages        = 100     // per append
	maxParts           = 64      // per message
	maxMessageText     = 1 << 20 // characters of one content string
	maxSummaryLen      = 1 << 20 // characters of a compaction summary
	maxKeepLast        = 10000   // messages kept by a compaction
	maxRunsPage        = 200     // list_runs
	maxOutputPage      = 1000    // read_run_output
	maxSessionsPage    = 200     // list_sessions, get_session
	maxAutomationsPage = 500     // list_automations
	maxTargetsPage     = 500     // list_targets
	maxCronLen         = 256
	maxTZLen           = 64
	maxEveryLen        = 32
	maxGlobLen         = 1024
	maxGlobs           = 16
	maxURLLen          = 2048
	maxOwnerLen        = ids.MaxLen
	maxKeyLen          = ids.MaxLen
	_                  = maxMessageText + maxSummaryLen
)

// obj is a JSON Schema node.
type obj = map[string]any

func object(required []string, props obj) obj {
	o := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

// openObject is an object whose properties are free (a run's input).
func openObject(desc string) obj {
	return obj{"type": "object", "description": desc, "maxProperties": maxInputProps}
}

func str(desc string, maxLen int) obj {
	return obj{"type": "string", "description": desc, "maxLength": maxLen}
}

func idArg(desc string) obj {
	return obj{"type": "string", "description": desc + " Letters, digits, '.', '_', '-', ':'; not starting with '.' or '-'.", "minLength": 1, "maxLength": maxIDLen}
}

func integer(desc string, lo, hi int) obj {
	return obj{"type": "integer", "description": desc, "minimum": lo, "maximum": hi}
}

func boolean(desc string) obj { return obj{"type": "boolean", "description": desc} }

func enum(desc string, values ...string) obj {
	return obj{"type": "string", "description": desc, "enum": values}
}

func waitArg(what string) obj {
	return obj{"type": "number", "description": "Seconds to wait " + what + " (0 to 60; default 0: answer at once).", "minimum": 0, "maximum": maxWaitSeconds}
}

func cursorArg() obj {
	return str("Opaque cursor from a previous answer's next_cursor; omit to start at the beginning.", maxCursorLen)
}

// hints are a tool's four annotation hints, all set explicitly.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

// newTool assembles a tool with its schemas and hints.
func newTool(name, title, desc string, in obj, out json.RawMessage, h hints, fn server.ToolHandlerFunc) server.ServerTool {
	inJSON, err := json.Marshal(in)
	if err != nil {
		panic(err) // schemas are literals: a failure is a programming error
	}
	t := mcpgo.NewTool(name,
		mcpgo.WithDescription(desc),
		mcpgo.WithToolAnnotation(mcpgo.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcpgo.ToBoolPtr(h.readOnly),
			DestructiveHint: mcpgo.ToBoolPtr(h.destructive),
			IdempotentHint:  mcpgo.ToBoolPtr(h.idempotent),
			OpenWorldHint:   mcpgo.ToBoolPtr(h.openWorld),
		}),
	)
	t.InputSchema = mcpgo.ToolInputSchema{}
	t.RawInputSchema = inJSON
	t.RawOutputSchema = out
	return server.ServerTool{Tool: t, Handler: fn}
}
