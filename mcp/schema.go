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
	maxIDLen        = ids.MaxLen
	maxCursorLen    = 512
	maxWaitSeconds  = 60
	maxAnswerLen    = 16 << 10
	maxTitleLen     = 512
	maxNoteLen      = 2048
	maxInputProps   = 256
	maxMessages     = 100     // per append
	maxParts        = 64      // per message
	maxMessageText  = 1 << 20 // characters of one content string
	maxSummaryLen   = 1 << 20 // characters of a compaction summary
	maxKeepLast     = 10000   // messages kept by a compaction
	maxRunsPage     = 200     // list_runs
	maxOutputPage   = 1000    // read_run_output
	maxSessionsPage = 200     // list_sessions, get_session
	maxCronLen      = 256
	maxTZLen        = 64
	maxEveryLen     = 32
	maxGlobLen      = 1024
	maxGlobs        = 16
	maxURLLen       = 2048
	maxOwnerLen     = ids.MaxLen
	maxKeyLen       = ids.MaxLen
	_               = maxMessageText + maxSummaryLen
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

// Output schema nodes. Output schemas describe, they do not bound.
func outObject(required []string, props obj) obj {
	o := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func outArray(items obj) obj { return obj{"type": "array", "items": items} }

var (
	outString  = obj{"type": "string"}
	outInt     = obj{"type": "integer"}
	outBool    = obj{"type": "boolean"}
	outTime    = obj{"type": "string", "format": "date-time"}
	outAny     = obj{}
	outAnyObj  = obj{"type": "object"}
	outStrList = outArray(outString)
)

func questionSchema() obj {
	return outObject([]string{"id", "text"}, obj{
		"id": outString, "text": outString, "choices": outStrList, "kind": outString, "step": outString,
	})
}

func runSchema() obj {
	return outObject([]string{"id", "target", "status", "revision", "created_at", "updated_at"}, obj{
		"id":       outString,
		"target":   outString,
		"status":   obj{"type": "string", "enum": []string{"queued", "running", "waiting", "succeeded", "failed", "cancelled"}},
		"input":    outAny,
		"result":   outAny,
		"error":    outString,
		"question": questionSchema(),
		"trigger": outObject([]string{"kind"}, obj{
			"kind": outString, "automation_id": outString, "nominal": outTime,
		}),
		"session_id":       outString,
		"owner_pid":        outInt,
		"cancel_requested": outBool,
		"wake_at":          outTime,
		"steps": outArray(outObject([]string{"id", "status"}, obj{
			"id": outString, "kind": outString, "status": outString, "attempts": outInt,
			"started_at": outTime, "finished_at": outTime, "exit_code": outInt, "status_code": outInt,
			"answer": outString, "until": outTime, "error": outString,
		})),
		"revision":    outInt,
		"created_at":  outTime,
		"updated_at":  outTime,
		"started_at":  outTime,
		"finished_at": outTime,
	})
}

func sessionSchema() obj {
	return outObject([]string{"id", "message_count", "revision", "created_at", "updated_at"}, obj{
		"id": outString, "title": outString, "parent_id": outString,
		"message_count": outInt, "compactions": outInt, "compacted_at": outTime,
		"memory_file": outString, "revision": outInt, "created_at": outTime, "updated_at": outTime,
	})
}

func messageSchema() obj {
	return outObject([]string{"id", "seq", "role", "parts", "created_at"}, obj{
		"id": outString, "seq": outInt, "role": outString, "parts": outArray(outAnyObj),
		"metadata": outAnyObj, "created_at": outTime,
	})
}

func automationSchema() obj {
	return outObject([]string{"id", "key", "owner", "target", "trigger", "enabled", "overlap", "missed", "revision"}, obj{
		"id": outString, "key": outString, "owner": outString, "target": outString, "input": outAny,
		"trigger": outObject(nil, obj{
			"kind": outString, "cron": outString, "tz": outString, "every": outString, "files": outStrList, "url": outString,
		}),
		"enabled": outBool, "note": outString, "overlap": outString, "missed": outString,
		"schedule": outString, "source": outString,
		"history": outObject(nil, obj{
			"last_start": outTime, "last_finish": outTime, "last_status": outString, "last_run_id": outString,
			"next_due": outTime, "fires": outInt, "skipped": outInt, "missed": outInt, "last_error": outString,
		}),
		"revision": outInt, "created_at": outTime, "updated_at": outTime,
	})
}

// hints are a tool's four annotation hints, all set explicitly.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

// newTool assembles a tool with its schemas and hints.
func newTool(name, title, desc string, in, out obj, h hints, fn server.ToolHandlerFunc) server.ServerTool {
	inJSON, err := json.Marshal(in)
	if err != nil {
		panic(err) // schemas are literals: a failure is a programming error
	}
	outJSON, err := json.Marshal(out)
	if err != nil {
		panic(err)
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
	t.RawOutputSchema = outJSON
	return server.ServerTool{Tool: t, Handler: fn}
}
