package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/store"
)

// Decisions a person can give on a pending automation through
// elicitation; "later" leaves it pending (mcp-host automations approve).
const (
	decisionApprove = "approve"
	decisionReject  = "reject"
	decisionLater   = "later"
)

// followApproval asks the person at the client of ctx, if it offers
// elicitation, whether the pending automation a may fire. The question is
// sent from the watcher's loop, not from the call that made a pending.
func (e *elicitor) followApproval(ctx context.Context, a *store.Automation) {
	sess, ok := offersElicitation(ctx)
	if !ok || a.Approval != store.ApprovalPending {
		return
	}
	e.mu.Lock()
	if len(e.approvals) < maxElicitedRuns {
		e.approvals[a.ID] = pendingApproval{sess: sess, a: store.CloneAutomation(a)}
	}
	e.mu.Unlock()
	e.s.subs.poke()
}

// pendingApproval is an automation to put to the person of sess.
type pendingApproval struct {
	sess server.ClientSession
	a    *store.Automation
}

// askApprovalsLocked sends the approval questions queued so far. Called with
// e.mu held.
func (e *elicitor) askApprovalsLocked(ctx context.Context) {
	for id, p := range e.approvals {
		delete(e.approvals, id)
		e.wg.Add(1)
		go e.askApproval(ctx, p)
	}
}

// askApproval asks whether an agent's pending automation may fire, and
// approves or rejects it as the person says: their decision is human.
func (e *elicitor) askApproval(ctx context.Context, p pendingApproval) {
	defer e.wg.Done()
	a := p.a
	req := mcpgo.ElicitationRequest{
		Request: mcpgo.Request{Method: string(mcpgo.MethodElicitationCreate)},
		Params: mcpgo.ElicitationParams{
			Message: fmt.Sprintf("%s created or changed automation %s: %s → %s. Let it fire?", a.Owner, a.Key, automations.Describe(a.Trigger), a.Target),
			RequestedSchema: map[string]any{"type": "object", "required": []string{"decision"}, "properties": map[string]any{
				"decision": map[string]any{"type": "string", "title": "Decision", "enum": []string{decisionApprove, decisionReject, decisionLater}},
			}},
		},
	}
	res, err := e.s.mcp.RequestElicitation(e.s.mcp.WithContext(ctx, p.sess), req)
	if err != nil {
		e.s.log.Info("mcp: elicitation of an automation's approval", "automation", a.ID, "err", err)
		return
	}
	content, _ := res.Content.(map[string]any)
	decision, _ := content["decision"].(string)
	if res.Action != mcpgo.ElicitationResponseActionAccept || (decision != decisionApprove && decision != decisionReject) {
		return // still pending
	}
	as, err := e.s.automations()
	if err == nil {
		if decision == decisionApprove {
			_, err = as.Approve(ctx, a.ID)
		} else {
			_, err = as.Reject(ctx, a.ID)
		}
	}
	outcome := store.AuditOK
	if err != nil {
		outcome = store.AuditError
		e.s.log.Warn("mcp: "+decision+" automation with the person's elicitation answer", "automation", a.ID, "err", err)
	}
	if e.s.p.Audit != nil {
		args, _ := json.Marshal(map[string]string{"automation_id": a.ID, "decision": decision})
		e.s.p.Audit.Record(ctx, audit.Entry{
			Principal: access.Human, Connection: e.s.connectionOf(p.sess.SessionID()), Tool: string(mcpgo.MethodElicitationCreate),
			Args: args, Outcome: outcome, Subject: a.ID,
		})
	}
}
