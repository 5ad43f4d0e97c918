package runs

import (
	"cmp"
	"context"
	"fmt"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/internal/text"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// AnswerParams answer a waiting run's question.
type AnswerParams struct {
	RunID string
	// QuestionID, when set, must name the open question (so an answer
	// meant for an earlier question is refused).
	QuestionID string
	Answer     string
	// By is who answers: "human" or "" for a person (the CLI, an
	// elicitation answer), "agent:<client>" for an agent, which cannot
	// answer a question for a person (a *HumanQuestionError). It is
	// written in the journal's answer record.
	By string
}

// HumanQuestionError refuses an agent's answer to a question only a
// person may answer (for: human, or a step that may or may not have run).
type HumanQuestionError struct {
	RunID string
	By    string
}

func (e *HumanQuestionError) Error() string {
	return fmt.Sprintf("answer run %s: the question is for a person, not %s: answer it with mcp-host answer %s <answer>, or in the client's prompt when it offers one", e.RunID, e.By, e.RunID)
}

// maxAnswer bounds an answer's length.
const maxAnswer = 64 << 10

// Answer stores the answer to the question a waiting run asks; the run
// then resumes in this process (when its peer loop runs) or in any live
// peer. A run that is not waiting gives a *StateError ("run <id> is not
// waiting (status: <status>)"); an answer outside the question's choices
// an *AnswerError.
func (e *Engine) Answer(ctx context.Context, p AnswerParams) (*Run, error) {
	if err := ids.Validate("run id", p.RunID); err != nil {
		return nil, err
	}
	r, err := e.st.GetRun(ctx, p.RunID)
	if err != nil {
		return nil, err
	}
	q := r.Question
	if r.Status != store.RunWaiting || q == nil {
		return nil, &StateError{ID: r.ID, Status: r.Status, Op: "answer"}
	}
	if p.QuestionID != "" && p.QuestionID != q.ID {
		return nil, fmt.Errorf("answer run %s: question %s is no longer open (the open one is %s)", r.ID, p.QuestionID, q.ID)
	}
	if q.HumanOnly() && access.Principal(p.By).IsAgent() {
		return nil, &HumanQuestionError{RunID: r.ID, By: p.By}
	}
	if err := checkAnswer(r.ID, p.Answer, q.Choices); err != nil {
		return nil, err
	}
	r, err = e.st.AnswerRun(ctx, store.AnswerParams{ID: r.ID, QuestionID: q.ID, Answer: p.Answer, Now: e.now()})
	if err != nil {
		return nil, err
	}
	e.appendRecord(r.ID, Record{Type: RecordAnswer, PID: e.pid, Step: q.Step, Text: p.Answer, Question: q, By: cmp.Or(p.By, "human")})
	e.changed(r.ID)
	e.kickLoop()
	return e.view(ctx, r, true)
}

func checkAnswer(runID, answer string, choices []string) error {
	bad := func(reason string) error {
		return &AnswerError{RunID: runID, Answer: answer, Choices: choices, Reason: reason}
	}
	switch {
	case len(answer) > maxAnswer:
		return bad(fmt.Sprintf("the answer is longer than %d bytes", maxAnswer))
	case !jsonSafe(answer):
		return bad("the answer must be UTF-8 text without NUL bytes")
	}
	if len(choices) == 0 {
		return nil
	}
	for _, c := range choices {
		if c == answer {
			return nil
		}
	}
	return bad(fmt.Sprintf("%q is not one of the choices: %s", text.Shorten(answer, 40), quoteList(choices)))
}
