package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/mark3labs/mcp-go/server"
)

func (s *Server) sessions() (sessionManager, error) {
	if s.p.Sessions == nil {
		return nil, &unavailableError{"sessions"}
	}
	return s.p.Sessions, nil
}

// newSession is a session as agents see it.
func newSession(m sessionManager, x *store.Session) *session {
	if x == nil {
		return nil
	}
	out := &session{
		ID: x.ID, Title: x.Title, ParentID: x.ParentID, MessageCount: x.MessageCount,
		Compactions: x.Summary.Compactions, CompactedAt: x.Summary.CompactedAt,
		Revision: x.Revision, CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt,
	}
	if x.Summary.Compactions > 0 {
		out.MemoryFile = m.MemoryPath(x.ID)
	}
	return out
}

type pageIn struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
	budgetIn
}

func (s *Server) listSessionsTool() server.ServerTool {
	return newTool("list_sessions", "List sessions",
		"List stored agent sessions (conversations), newest first, with their titles and message counts. Pages: pass next_cursor back as cursor to continue.",
		object(nil, withBudget(obj{
			"limit":  integer("Most sessions to return (default 20).", 1, maxSessionsPage),
			"cursor": cursorArg(),
		})),
		outputSchema[sessionPage](),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in pageIn) (*sessionPage, error) {
			ss, err := s.sessions()
			if err != nil {
				return nil, err
			}
			if in.Limit == 0 {
				in.Limit = 20
			}
			list, next, err := page.Fill(in.Limit, in.room(), func(limit int) ([]*session, string, error) {
				page, err := ss.List(ctx, sessions.ListParams{Cursor: in.Cursor, Limit: limit})
				if err != nil {
					return nil, "", err
				}
				list := make([]*session, 0, len(page.Sessions))
				for _, x := range page.Sessions {
					list = append(list, newSession(ss, x))
				}
				return list, page.NextCursor, nil
			}, func(x *session) string { return "session " + x.ID })
			if err != nil {
				return nil, err
			}
			return &sessionPage{Sessions: list, NextCursor: next}, nil
		}))
}

type getSessionIn struct {
	SessionID string `json:"session_id"`
	Cursor    string `json:"cursor"`
	Limit     int    `json:"limit"`
	budgetIn
}

func (s *Server) getSessionTool() server.ServerTool {
	return newTool("get_session", "Read a session",
		"Return a session and a page of its messages in order (oldest first; after a compaction the first one is the summary). Pages: pass next_cursor back as cursor to read on.",
		object([]string{"session_id"}, withBudget(obj{
			"session_id": idArg("The session's id."),
			"cursor":     cursorArg(),
			"limit":      integer("Most messages to return (default 50).", 1, maxSessionsPage),
		})),
		outputSchema[sessionRead](),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in getSessionIn) (*sessionRead, error) {
			ss, err := s.sessionsFor(in.SessionID)
			if err != nil {
				return nil, err
			}
			if in.Limit == 0 {
				in.Limit = 50
			}
			sess, msgs, next, err := readMessages(ctx, ss, in, in.room()-sessionHeadBytes)
			if err != nil {
				return nil, err
			}
			out := &sessionRead{Session: newSession(ss, sess), Messages: msgs, NextCursor: next}
			if out.Messages == nil {
				out.Messages = []*store.Message{}
			}
			return out, nil
		}))
}

// sessionHeadBytes is kept for the session get_session returns with its
// messages: a title is at most maxTitleLen characters, a memory file path
// a few hundred bytes.
const sessionHeadBytes = 6*maxTitleLen + 2<<10

type createSessionIn struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
}

type createSessionOut struct {
	Session *session `json:"session"`
	Created bool     `json:"created"`
}

func (s *Server) createSessionTool() server.ServerTool {
	return newTool("create_session", "Create a session",
		"Create a session to store a conversation in. With session_id, the call is idempotent: an existing session with that id is returned unchanged (created=false). Without one, a fresh id is generated.",
		object(nil, obj{
			"session_id": idArg("Id to give the session; omit for a generated one."),
			"title":      str("A short title.", maxTitleLen),
		}),
		outputSchema[createSessionOut](),
		hints{idempotent: true},
		handler(func(ctx context.Context, _ *call, in createSessionIn) (*createSessionOut, error) {
			ss, err := s.sessions()
			if err != nil {
				return nil, err
			}
			if in.SessionID != "" {
				if err := validateID("session id", "session_id", in.SessionID); err != nil {
					return nil, err
				}
			}
			sess, created, err := ss.Create(ctx, sessions.CreateParams{ID: in.SessionID, Title: in.Title})
			if err != nil {
				return nil, err
			}
			return &createSessionOut{Session: newSession(ss, sess), Created: created}, nil
		}))
}

type messageIn struct {
	ID       string          `json:"id"`
	Role     string          `json:"role"`
	Content  *string         `json:"content"`
	Parts    json.RawMessage `json:"parts"`
	Metadata json.RawMessage `json:"metadata"`
}

type appendIn struct {
	SessionID string      `json:"session_id"`
	Messages  []messageIn `json:"messages"`
}

type appendedMessage struct {
	ID  string `json:"id"`
	Seq int64  `json:"seq"`
}

type appendOut struct {
	Session  *session          `json:"session"`
	Appended []appendedMessage `json:"appended"`
}

func partsSchema() obj {
	return obj{
		"type":        "array",
		"description": "Message parts, each an object with a type: {\"type\":\"text\",\"text\":...}, {\"type\":\"tool_call\",...} or {\"type\":\"tool_result\",...}. Give content or parts, not both.",
		"maxItems":    maxParts,
		"items": obj{
			"type":          "object",
			"required":      []string{"type"},
			"properties":    obj{"type": enum("Part type.", "text", "tool_call", "tool_result")},
			"maxProperties": 32,
		},
	}
}

func (s *Server) appendSessionMessagesTool() server.ServerTool {
	return newTool("append_session_messages", "Append messages to a session",
		"Append messages to the end of a session, all or none, in order. Safe while other clients append to the same session. Each message has a role and either content (plain text) or parts.",
		object([]string{"session_id", "messages"}, obj{
			"session_id": idArg("The session's id."),
			"messages": obj{
				"type": "array", "description": "Messages to append, in order.", "minItems": 1, "maxItems": maxMessages,
				"items": object([]string{"role"}, obj{
					"id":       idArg("Message id, unique in the session; omit for a generated one."),
					"role":     enum("Who wrote it.", "user", "assistant", "system", "tool"),
					"content":  str("Plain text: shorthand for parts [{\"type\":\"text\",\"text\":content}].", maxMessageText),
					"parts":    partsSchema(),
					"metadata": openObject("Free metadata."),
				}),
			},
		}),
		outputSchema[appendOut](),
		hints{},
		handler(func(ctx context.Context, _ *call, in appendIn) (*appendOut, error) {
			ss, err := s.sessionsFor(in.SessionID)
			if err != nil {
				return nil, err
			}
			if len(in.Messages) == 0 || len(in.Messages) > maxMessages {
				return nil, &argumentError{Name: "messages", Reason: fmt.Sprintf("give 1 to %d messages", maxMessages)}
			}
			msgs := make([]sessions.MessageInput, 0, len(in.Messages))
			for i, m := range in.Messages {
				nm, err := newMessage(i, m)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, nm)
			}
			res, err := ss.Append(ctx, in.SessionID, msgs)
			if err != nil {
				return nil, err
			}
			out := &appendOut{Session: newSession(ss, res.Session), Appended: make([]appendedMessage, 0, len(res.Messages))}
			for _, m := range res.Messages {
				out.Appended = append(out.Appended, appendedMessage{ID: m.ID, Seq: m.Seq})
			}
			return out, nil
		}))
}

// newMessage turns one appended message argument into a message to append.
func newMessage(i int, m messageIn) (sessions.MessageInput, error) {
	arg := fmt.Sprintf("messages[%d]", i)
	if m.ID != "" {
		if err := validateID("message id", arg+".id", m.ID); err != nil {
			return sessions.MessageInput{}, err
		}
	}
	hasParts := len(m.Parts) > 0 && string(m.Parts) != "null"
	switch {
	case m.Content != nil && hasParts:
		return sessions.MessageInput{}, &argumentError{Name: arg, Reason: "give content or parts, not both"}
	case m.Content == nil && !hasParts:
		return sessions.MessageInput{}, &argumentError{Name: arg, Reason: "give content (text) or parts"}
	}
	parts := m.Parts
	if m.Content != nil {
		b, err := json.Marshal([]map[string]string{{"type": "text", "text": *m.Content}})
		if err != nil {
			return sessions.MessageInput{}, &argumentError{Name: arg + ".content", Reason: err.Error()}
		}
		parts = b
	}
	meta := m.Metadata
	if string(meta) == "null" {
		meta = nil
	}
	return sessions.MessageInput{ID: m.ID, Role: store.Role(m.Role), Parts: parts, Metadata: meta}, nil
}

type compactIn struct {
	SessionID string `json:"session_id"`
	Summary   string `json:"summary"`
	KeepLast  *int   `json:"keep_last"`
}

func (s *Server) compactSessionTool() server.ServerTool {
	return newTool("compact_session", "Compact a session",
		"Replace a session's older messages with your summary, keeping the last keep_last messages (default 4). The complete previous state is archived first (the newest five archives are kept), the summary becomes the first message (a preview of at most 32 KiB) and its full text is written to the session's memory file.",
		object([]string{"session_id", "summary"}, obj{
			"session_id": idArg("The session's id."),
			"summary":    obj{"type": "string", "description": "The summary of the messages being replaced.", "minLength": 1, "maxLength": maxSummaryLen},
			"keep_last":  integer("How many of the newest messages to keep after the summary (default 4).", 0, maxKeepLast),
		}),
		outputSchema[compaction](),
		hints{destructive: true},
		handler(func(ctx context.Context, _ *call, in compactIn) (*compaction, error) {
			ss, err := s.sessionsFor(in.SessionID)
			if err != nil {
				return nil, err
			}
			res, err := ss.Compact(ctx, sessions.CompactParams{SessionID: in.SessionID, Summary: in.Summary, KeepLast: in.KeepLast})
			if err != nil {
				return nil, err
			}
			out := &compaction{
				Session: newSession(ss, res.Session), Compacted: res.Compacted, MemoryFile: res.MemoryPath,
				Truncated: res.Truncated, Pruned: res.Pruned, Warnings: res.Warnings,
			}
			if res.Archive != nil {
				out.ArchiveID = res.Archive.ID
			}
			return out, nil
		}))
}

type sessionIDIn struct {
	SessionID string `json:"session_id"`
}

func (s *Server) deleteSessionTool() server.ServerTool {
	return newTool("delete_session", "Delete a session",
		"Delete a session with all its messages, archives and memory file. This cannot be undone.",
		object([]string{"session_id"}, obj{"session_id": idArg("The session's id.")}),
		outputSchema[deletedOut](),
		hints{destructive: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in sessionIDIn) (*deletedOut, error) {
			ss, err := s.sessionsFor(in.SessionID)
			if err != nil {
				return nil, err
			}
			if err := ss.Delete(ctx, in.SessionID); err != nil {
				return nil, err
			}
			return &deletedOut{ID: in.SessionID, Deleted: true}, nil
		}))
}

// sessionsFor is the session manager, for a call about the session id
// (validated).
func (s *Server) sessionsFor(id string) (sessionManager, error) {
	ss, err := s.sessions()
	if err != nil {
		return nil, err
	}
	return ss, validateID("session id", "session_id", id)
}
