package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// Part types.
const (
	PartText       = "text"        // {"type":"text","text":"..."}
	PartToolCall   = "tool_call"   // {"type":"tool_call","id":"...","name":"...","input":{...}}
	PartToolResult = "tool_result" // {"type":"tool_result","tool_call_id":"...","content":...,"is_error":false}
)

// MessageInput is a message to append.
type MessageInput struct {
	// ID is optional: unique within the session, generated when empty.
	ID   string     `json:"id,omitempty"`
	Role store.Role `json:"role"`
	// Text is a shorthand for Parts = [{"type":"text","text":Text}].
	Text string `json:"text,omitempty"`
	// Parts is a JSON array of parts (see the Part constants): every part
	// an object with a "type"; a text part has a string "text", a tool
	// call a non-empty string "name". Other fields are kept as given.
	Parts json.RawMessage `json:"parts,omitempty"`
	// Metadata is an optional JSON object.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// TextMessage is a one-part text message.
func TextMessage(role store.Role, text string) MessageInput {
	return MessageInput{Role: role, Text: text}
}

// toMessage validates in and returns the message to store. what names it
// in errors ("message 3").
func toMessage(what string, in MessageInput) (*store.Message, error) {
	if in.ID != "" {
		if err := ids.Validate("message id", in.ID); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	if !in.Role.Valid() {
		return nil, invalidf(what, "unknown role %q (use user, assistant, system or tool)", in.Role)
	}
	var parts []byte
	switch {
	case len(in.Parts) > 0 && in.Text != "":
		return nil, invalidf(what, "give either text or parts, not both")
	case len(in.Parts) > 0:
		if len(in.Parts) > MaxMessageBytes {
			return nil, &LimitError{What: what, Size: len(in.Parts) + len(in.Metadata), Limit: MaxMessageBytes, Per: "per message"}
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, in.Parts); err != nil {
			return nil, invalidf(what, "parts are not JSON: %v", err)
		}
		parts = buf.Bytes()
		if err := checkParts(what, parts); err != nil {
			return nil, err
		}
	case in.Text != "":
		if len(in.Text) > MaxMessageBytes {
			return nil, &LimitError{What: what, Size: len(in.Text) + len(in.Metadata), Limit: MaxMessageBytes, Per: "per message"}
		}
		var err error
		if parts, err = json.Marshal([]textPart{{Type: PartText, Text: in.Text}}); err != nil {
			return nil, invalidf(what, "text: %v", err)
		}
	default:
		return nil, invalidf(what, "no content: give text or parts")
	}
	metadata := []byte("{}")
	if len(bytes.TrimSpace(in.Metadata)) > 0 && string(bytes.TrimSpace(in.Metadata)) != "null" {
		var buf bytes.Buffer
		if err := json.Compact(&buf, in.Metadata); err != nil {
			return nil, invalidf(what, "metadata is not JSON: %v", err)
		}
		if buf.Bytes()[0] != '{' {
			return nil, invalidf(what, "metadata must be a JSON object")
		}
		metadata = buf.Bytes()
	}
	if size := len(parts) + len(metadata); size > MaxMessageBytes {
		return nil, &LimitError{What: what, Size: size, Limit: MaxMessageBytes, Per: "per message"}
	}
	return &store.Message{ID: in.ID, Role: in.Role, Parts: parts, Metadata: metadata}, nil
}

type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func checkParts(what string, parts []byte) error {
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(parts, &list); err != nil {
		return invalidf(what, "parts must be a JSON array of objects")
	}
	if len(list) == 0 {
		return invalidf(what, "parts must not be empty")
	}
	for i, p := range list {
		var typ string
		if err := json.Unmarshal(p["type"], &typ); err != nil || typ == "" {
			return invalidf(what, "part %d has no \"type\"", i)
		}
		str := func(field string) (string, bool) {
			var s string
			err := json.Unmarshal(p[field], &s)
			return s, err == nil && p[field] != nil
		}
		switch typ {
		case PartText:
			if _, ok := str("text"); !ok {
				return invalidf(what, "text part %d needs a string \"text\"", i)
			}
		case PartToolCall:
			if name, ok := str("name"); !ok || name == "" {
				return invalidf(what, "tool_call part %d needs a string \"name\"", i)
			}
		case PartToolResult:
		default:
			return invalidf(what, "part %d has unknown type %q (use text, tool_call or tool_result)", i, typ)
		}
	}
	return nil
}

// AppendResult is what an append stored.
type AppendResult struct {
	// Session is the session right after the append.
	Session  *store.Session   `json:"session"`
	Messages []*store.Message `json:"messages"`
}

// Append adds messages to the end of a session, all or none.
func (m *Manager) Append(ctx context.Context, sessionID string, msgs []MessageInput) (*AppendResult, error) {
	if err := ids.Validate("session id", sessionID); err != nil {
		return nil, err
	}
	switch {
	case len(msgs) == 0:
		return nil, invalidf("append", "no messages")
	case len(msgs) > MaxAppendMessages:
		return nil, invalidf("append", "%d messages; the limit is %d per append", len(msgs), MaxAppendMessages)
	}
	out := make([]*store.Message, len(msgs))
	total := 0
	now := m.clk.Now()
	for i, in := range msgs {
		msg, err := toMessage("message "+strconv.Itoa(i), in)
		if err != nil {
			return nil, err
		}
		total += len(msg.Parts) + len(msg.Metadata)
		if total > MaxAppendBytes {
			return nil, &LimitError{What: "append", Size: total, Limit: MaxAppendBytes, Per: "per append"}
		}
		msg.CreatedAt = now
		out[i] = msg
	}
	sess, err := m.st.AppendMessages(ctx, sessionID, out)
	if err != nil {
		return nil, err
	}
	return &AppendResult{Session: sess, Messages: out}, nil
}

// ReadParams select a page of a session's messages.
type ReadParams struct {
	SessionID string `json:"session_id"`
	// Cursor is a page's NextCursor; empty starts at the first message.
	Cursor string `json:"cursor,omitempty"`
	// Limit caps the page: 0 means DefaultPageLimit, at most MaxPageLimit.
	Limit int `json:"limit,omitempty"`
}

// MessagePage is a session and one page of its messages, in order.
type MessagePage struct {
	Session  *store.Session   `json:"session"`
	Messages []*store.Message `json:"messages"`
	// NextCursor continues the reading; empty when the page reached the
	// last message (appends later continue after it: pass the last
	// message's seq as the cursor to follow a session).
	NextCursor string `json:"next_cursor,omitempty"`
}

// Read returns a page of a session's messages.
func (m *Manager) Read(ctx context.Context, p ReadParams) (*MessagePage, error) {
	if err := ids.Validate("session id", p.SessionID); err != nil {
		return nil, err
	}
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	var after int64
	if p.Cursor != "" {
		if after, err = strconv.ParseInt(p.Cursor, 10, 64); err != nil || after < 0 {
			return nil, invalidf("cursor", "%q is not a message cursor (a sequence number)", p.Cursor)
		}
	}
	sess, err := m.st.GetSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	m.writeOutShared(ctx, sess) // get_session gives the memory file's path
	msgs, err := m.st.ListMessages(ctx, store.ListMessagesParams{SessionID: p.SessionID, AfterSeq: after, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	page := &MessagePage{Session: sess, Messages: []*store.Message{}}
	size := 0
	for i, msg := range msgs {
		size += len(msg.Parts) + len(msg.Metadata)
		if i == limit || (i > 0 && size > MaxPageBytes) {
			page.NextCursor = strconv.FormatInt(page.Messages[i-1].Seq, 10)
			break
		}
		page.Messages = append(page.Messages, msg)
	}
	return page, nil
}

// each calls fn for every message of a session, in order, a page at a time.
func (m *Manager) each(ctx context.Context, sessionID string, fn func(*store.Message) error) error {
	var after int64
	for {
		msgs, err := m.st.ListMessages(ctx, store.ListMessagesParams{SessionID: sessionID, AfterSeq: after, Limit: 500})
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			if err := fn(msg); err != nil {
				return err
			}
			after = msg.Seq
		}
		if len(msgs) < 500 {
			return nil
		}
	}
}
