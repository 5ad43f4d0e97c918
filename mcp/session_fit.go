package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// readMessages is get_session's page: the messages after in's cursor
// that fit in room, and the session; a message too large for the page on
// its own comes cut (cutMessage).
func readMessages(ctx context.Context, ss sessionManager, in getSessionIn, room int) (*store.Session, []*store.Message, string, error) {
	var sess *store.Session
	msgs, next, err := page.FillOrCut(in.Limit, room, page.Compact, func(limit int) ([]*store.Message, string, error) {
		p, err := ss.Read(ctx, sessions.ReadParams{SessionID: in.SessionID, Cursor: in.Cursor, Limit: limit})
		if err != nil {
			return nil, "", err
		}
		sess = p.Session
		return p.Messages, p.NextCursor, nil
	}, func(m *store.Message) string { return "message " + m.ID },
		func(m *store.Message, size int) *store.Message { return cutMessage(m, size, in, room) })
	return sess, msgs, next, err
}

// cutMessage is m cut (sessions.CutMessage), its metadata emptied too
// when the copy still does not fit room.
func cutMessage(m *store.Message, size int, in getSessionIn, room int) *store.Message {
	cut := sessions.CutMessage(m, size, fmt.Sprintf("read it whole with a larger max_bytes (at most %d) if it fits there, or with mcp-host sessions export %s", MaxReplyBytes, in.SessionID))
	if n, _, _ := page.Fit([]*store.Message{cut}, room); n == 0 {
		cut.Metadata = json.RawMessage(`{}`)
	}
	return cut
}
