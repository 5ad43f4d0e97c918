package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// auditedTools are the tools whose calls are agent actions to audit:
// everything that launches, answers, cancels or changes something.
var auditedTools = map[string]bool{
	"launch_run": true, "answer_run": true, "cancel_run": true,
	"create_automation": true, "update_automation": true, "delete_automation": true, "trigger_automation": true,
	"create_session": true, "append_session_messages": true, "compact_session": true, "delete_session": true,
}

// auditNote is what a handler tells the audit of its call: the record it
// acted on, or the policy key that refused it.
type auditNote struct {
	mu      sync.Mutex
	subject string
	refused string
}

type auditNoteKey struct{}

// noteSubject records id as the subject of the audited call in ctx.
func noteSubject(ctx context.Context, id string) {
	if n, ok := ctx.Value(auditNoteKey{}).(*auditNote); ok {
		n.mu.Lock()
		n.subject = id
		n.mu.Unlock()
	}
}

// noteRefusal records a refusal by the policy for the audit of ctx's call.
func noteRefusal(ctx context.Context, err error) {
	var re *access.RefusedError
	n, ok := ctx.Value(auditNoteKey{}).(*auditNote)
	if !ok || !errors.As(err, &re) {
		return
	}
	n.mu.Lock()
	n.refused = re.Key
	n.mu.Unlock()
}

// auditTool records every call of an audited tool after it answered:
// principal, connection, tool, a digest of the arguments and the outcome.
func (s *Server) auditTool(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		if s.p.Audit == nil || !auditedTools[req.Params.Name] {
			return next(ctx, req)
		}
		n := &auditNote{}
		res, err := next(context.WithValue(ctx, auditNoteKey{}, n), req)
		args := rawArguments(req)
		n.mu.Lock()
		outcome, subject := store.AuditOK, cmp.Or(n.subject, subjectOf(args))
		switch {
		case n.refused != "":
			outcome, subject = store.AuditRefused, n.refused
		case err != nil || res == nil || res.IsError:
			outcome = store.AuditError
		}
		n.mu.Unlock()
		s.p.Audit.Record(ctx, audit.Entry{
			Principal: s.principal(ctx), Connection: s.connection(ctx), Tool: req.Params.Name,
			Args: args, Outcome: outcome, Subject: subject,
		})
		return res, err
	}
}

// subjectOf is the record a call's arguments name (a run, automation or
// session id), when the handler noted none.
func subjectOf(args json.RawMessage) string {
	var ref struct {
		RunID     string `json:"run_id"`
		SessionID string `json:"session_id"`
		ID        string `json:"id"`
	}
	if json.Unmarshal(args, &ref) != nil {
		return ""
	}
	s := cmp.Or(ref.RunID, ref.SessionID, ref.ID)
	if ids.Validate("id", s) != nil {
		return ""
	}
	return s
}

// rawArguments are a call's arguments as JSON.
func rawArguments(req mcpgo.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	b, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return nil
	}
	return b
}
