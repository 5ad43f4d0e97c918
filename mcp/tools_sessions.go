package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/server"
)

func (s *Server) sessions() (SessionService, error) {
	if s.p.Sessions == nil {
		return nil, &unavailableError{"sessions"}
	}
	return s.p.Sessions, nil
}

type pageIn struct {
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
}

func (s *Server) listSessionsTool() server.ServerTool {
	return newTool("list_sessions", "List sessions",
		"List stored agent sessions (conversations), newest first, with their titles and message counts. Pages: pass next_cursor back as cursor to continue.",
		object(nil, obj{
			"limit":  integer("Most sessions to return (default 20).", 1, maxSessionsPage),
			"cursor": cursorArg(),
		}),
		outObject([]string{"sessions"}, obj{"sessions": outArray(sessionSchema()), "next_cursor": outString}),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in pageIn) (*SessionPage, error) {
			ss, err := s.sessions()
			if err != nil {
				return nil, err
			}
			if in.Limit == 0 {
				in.Limit = 20
			}
			page, err := ss.List(ctx, in.Limit, in.Cursor)
			if err != nil {
				return nil, err
			}
			if page.Sessions == nil {
				page.Sessions = []*Session{}
			}
			return page, nil
		}))
}

type getSessionIn struct {
	SessionID string `json:"session_id"`
	Cursor    string `json:"cursor"`
	Limit     int    `json:"limit"`
}

func (s *Server) getSessionTool() server.ServerTool {
	return newTool("get_session", "Read a session",
		"Return a session and a page of its messages in order (oldest first; after a compaction the first one is the summary). Pages: pass next_cursor back as cursor to read on.",
		object([]string{"session_id"}, obj{
			"session_id": idArg("The session's id."),
			"cursor":     cursorArg(),
			"limit":      integer("Most messages to return (default 50).", 1, maxSessionsPage),
		}),
		outObject([]string{"session", "messages"}, obj{"session": sessionSchema(), "messages": outArray(messageSchema()), "next_cursor": outString}),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in getSessionIn) (*SessionRead, error) {
			ss, err := s.sessions()
			if err != nil {
				return nil, err
			}
			if err := validateID("session id", "session_id", in.SessionID); err != nil {
				return nil, err
			}
			if in.Limit == 0 {
				in.Limit = 50
			}
			page, err := ss.Read(ctx, in.SessionID, in.Cursor, in.Limit)
			if err != nil {
				return nil, err
			}
			if page.Messages == nil {
				page.Messages = []*Message{}
			}
			return page, nil
		}))
}

type createSessionIn struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title"`
}

type createSessionOut struct {
	Session *Session `json:"session"`
	Created bool     `json:"created"`
}

func (s *Server) createSessionTool() server.ServerTool {
	return newTool("create_session", "Create a session",
		"Create a session to store a conversation in. With session_id, the call is idempotent: an existing session with that id is returned unchanged (created=false). Without one, a fresh id is generated.",
		object(nil, obj{
			"session_id": idArg("Id to give the session; omit for a generated one."),
			"title":      str("A short title.", maxTitleLen),
		}),
		outObject([]string{"session", "created"}, obj{"session": sessionSchema(), "created": outBool}),
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
			sess, created, err := ss.Create(ctx, CreateSessionParams{ID: in.SessionID, Title: in.Title})
			if err != nil {
				return nil, err
			}
			return &createSessionOut{Session: sess, Created: created}, nil
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
	Session  *Session          `json:"session"`
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
		outObject([]string{"session", "appended"}, obj{
			"session":  sessionSchema(),
			"appended": outArray(outObject([]string{"id", "seq"}, obj{"id": outString, "seq": outInt})),
		}),
		hints{},
		handler(func(ctx context.Context, _ *call, in appendIn) (*appendOut, error) {
			ss, err := s.sessions()
			if err != nil {
				return nil, err
			}
			if err := validateID("session id", "session_id", in.SessionID); err != nil {
				return nil, err
			}
			if len(in.Messages) == 0 || len(in.Messages) > maxMessages {
				return nil, &argumentError{Name: "messages", Reason: fmt.Sprintf("give 1 to %d messages", maxMessages)}
			}
			msgs := make([]NewMessage, 0, len(in.Messages))
			for i, m := range in.Messages {
				nm, err := newMessage(i, m)
				if err != nil {
					return nil, err
				}
				msgs = append(msgs, nm)
			}
			sess, added, err := ss.Append(ctx, in.SessionID, msgs)
			if err != nil {
				return nil, err
			}
			out := &appendOut{Session: sess, Appended: make([]appendedMessage, 0, len(added))}
			for _, m := range added {
				out.Appended = append(out.Appended, appendedMessage{ID: m.ID, Seq: m.Seq})
			}
			return out, nil
		}))
}

// newMessage turns one appended message argument into a NewMessage.
func newMessage(i int, m messageIn) (NewMessage, error) {
	arg := fmt.Sprintf("messages[%d]", i)
	if m.ID != "" {
		if err := validateID("message id", arg+".id", m.ID); err != nil {
			return NewMessage{}, err
		}
	}
	hasParts := len(m.Parts) > 0 && string(m.Parts) != "null"
	switch {
	case m.Content != nil && hasParts:
		return NewMessage{}, &argumentError{Name: arg, Reason: "give content or parts, not both"}
	case m.Content == nil && !hasParts:
		return NewMessage{}, &argumentError{Name: arg, Reason: "give content (text) or parts"}
	}
	parts := m.Parts
	if m.Content != nil {
		b, err := json.Marshal([]map[string]string{{"type": "text", "text": *m.Content}})
		if err != nil {
			return NewMessage{}, &argumentError{Name: arg + ".content", Reason: err.Error()}
		}
		parts = b
	}
	meta := m.Metadata
	if string(meta) == "null" {
		meta = nil
	}
	return NewMessage{ID: m.ID, Role: m.Role, Parts: parts, Metadata: meta}, nil
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
		outObject([]string{"session", "archive_id", "compacted"}, obj{
			"session": sessionSchema(), "archive_id": outString, "compacted": outInt, "memory_file": outString,
			"preview_truncated": outBool, "pruned_archives": outStrList, "warnings": outStrList,
		}),
		hints{destructive: true},
		handler(func(ctx context.Context, _ *call, in compactIn) (*Compaction, error) {
			ss, err := s.sessions()
			if err != nil {
				return nil, err
			}
			if err := validateID("session id", "session_id", in.SessionID); err != nil {
				return nil, err
			}
			keep := -1
			if in.KeepLast != nil {
				keep = *in.KeepLast
			}
			return ss.Compact(ctx, CompactParams{SessionID: in.SessionID, Summary: in.Summary, KeepLast: keep})
		}))
}

type sessionIDIn struct {
	SessionID string `json:"session_id"`
}

type deletedOut struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

func (s *Server) deleteSessionTool() server.ServerTool {
	return newTool("delete_session", "Delete a session",
		"Delete a session with all its messages, archives and memory file. This cannot be undone.",
		object([]string{"session_id"}, obj{"session_id": idArg("The session's id.")}),
		outObject([]string{"id", "deleted"}, obj{"id": outString, "deleted": outBool}),
		hints{destructive: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in sessionIDIn) (*deletedOut, error) {
			ss, err := s.sessions()
			if err != nil {
				return nil, err
			}
			if err := validateID("session id", "session_id", in.SessionID); err != nil {
				return nil, err
			}
			if err := ss.Delete(ctx, in.SessionID); err != nil {
				return nil, err
			}
			return &deletedOut{ID: in.SessionID, Deleted: true}, nil
		}))
}
