package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
)

// maxElicitedRuns bounds the runs one server follows to ask their
// questions through elicitation.
const maxElicitedRuns = 1000

// elicitor asks the person at the client the questions of the runs a
// connection launched, when the client offers elicitation: it follows
// those runs (on the resource watcher's beat), and when one parks on a
// question it sends elicitation/create with the choices as an enum. An
// accepted answer is the person's: it is recorded as human, in the run's
// journal and in the audit trail. A declined or cancelled prompt leaves
// the question open for answer_run or mcp-host answer.
type elicitor struct {
	s *Server

	mu        sync.Mutex
	runs      map[string]*followed       // by run id
	approvals map[string]pendingApproval // by automation id: to ask (elicit_approval.go)
	wg        sync.WaitGroup
}

// followed is a run whose questions go to a session.
type followed struct {
	sess  server.ClientSession
	asked string // the id of the question last asked
}

func newElicitor(s *Server) *elicitor {
	return &elicitor{s: s, runs: map[string]*followed{}, approvals: map[string]pendingApproval{}}
}

// offersElicitation reports whether the client of ctx can be asked.
func offersElicitation(ctx context.Context) (server.ClientSession, bool) {
	sess := server.ClientSessionFromContext(ctx)
	ci, ok := sess.(server.SessionWithClientInfo)
	if !ok {
		return nil, false
	}
	if _, ok := sess.(server.SessionWithElicitation); !ok {
		return nil, false
	}
	return sess, ci.GetClientCapabilities().Elicitation != nil
}

// follow asks run id's questions through the client of ctx, if it offers
// elicitation.
func (e *elicitor) follow(ctx context.Context, id string) {
	sess, ok := offersElicitation(ctx)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.runs) < maxElicitedRuns {
		e.runs[id] = &followed{sess: sess}
	}
}

// forget stops following the runs of a session that ended.
func (e *elicitor) forget(sessionID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, f := range e.runs {
		if f.sess.SessionID() == sessionID {
			delete(e.runs, id)
		}
	}
	for id, p := range e.approvals {
		if p.sess.SessionID() == sessionID {
			delete(e.approvals, id)
		}
	}
}

// busy reports whether runs are followed or approvals wait to be asked.
func (e *elicitor) busy() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.runs) > 0 || len(e.approvals) > 0
}

// check sends the approval questions queued, and looks at the followed
// runs: a settled one is dropped, a new question is asked (once).
func (e *elicitor) check(ctx context.Context) {
	if e.s.p.RunStore == nil || e.s.p.Runs == nil {
		e.mu.Lock()
		e.askApprovalsLocked(ctx)
		e.mu.Unlock()
		return
	}
	e.mu.Lock()
	e.askApprovalsLocked(ctx)
	ids := make([]string, 0, len(e.runs))
	for id := range e.runs {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	for _, id := range ids {
		r, err := e.s.p.RunStore.GetRun(ctx, id)
		if err != nil {
			continue
		}
		e.mu.Lock()
		f, q := e.runs[id], r.Question
		switch {
		case f == nil:
		case r.Status.Settled():
			delete(e.runs, id)
		case r.Status == store.RunWaiting && q != nil && f.asked != q.ID:
			f.asked = q.ID
			e.wg.Add(1)
			go e.ask(ctx, f.sess, r.ID, r.Target, q)
		}
		e.mu.Unlock()
	}
}

// ask puts one question to the person and answers the run with what they
// chose.
func (e *elicitor) ask(ctx context.Context, sess server.ClientSession, runID, target string, q *store.Question) {
	defer e.wg.Done()
	answer := map[string]any{"type": "string", "title": "Answer", "description": q.Text}
	if len(q.Choices) > 0 {
		answer["enum"] = q.Choices
	}
	req := mcpgo.ElicitationRequest{
		Request: mcpgo.Request{Method: string(mcpgo.MethodElicitationCreate)},
		Params: mcpgo.ElicitationParams{
			Message:         fmt.Sprintf("Run %s of %s asks: %s", runID, target, q.Text),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": answer}, "required": []string{"answer"}},
		},
	}
	res, err := e.s.mcp.RequestElicitation(e.s.mcp.WithContext(ctx, sess), req)
	if err != nil {
		e.s.log.Info("mcp: elicitation of a run's question", "run", runID, "err", err)
		return
	}
	content, _ := res.Content.(map[string]any)
	text, _ := content["answer"].(string)
	if res.Action != mcpgo.ElicitationResponseActionAccept || text == "" {
		return // the question stays open
	}
	_, err = e.s.p.Runs.Answer(ctx, runs.AnswerParams{RunID: runID, QuestionID: q.ID, Answer: text, By: string(access.Human)})
	outcome := store.AuditOK
	if err != nil {
		outcome = store.AuditError
		e.s.log.Warn("mcp: answer a run with the person's elicitation answer", "run", runID, "err", err)
	}
	if e.s.p.Audit != nil {
		args, _ := json.Marshal(map[string]string{"run_id": runID, "question_id": q.ID})
		e.s.p.Audit.Record(ctx, audit.Entry{
			Principal: access.Human, Connection: e.s.connectionOf(sess.SessionID()), Tool: string(mcpgo.MethodElicitationCreate),
			Args: args, Outcome: outcome, Subject: runID,
		})
	}
	e.s.subs.poke()
}

// wait waits for the questions being asked (after the watcher stopped,
// whose context ends them).
func (e *elicitor) wait() { e.wg.Wait() }
