package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// fillOrCut is page.Fill, except that an item too large for a page on
// its own does not stop the listing: it comes alone, cut to fit, and the
// cursor goes past it. cut is given the item and the bytes its JSON
// takes.
func fillOrCut[T any](limit, room int, fetch func(limit int) ([]T, string, error), what func(T) string, cut func(T, int) T) ([]T, string, error) {
	items, next, err := page.Fill(limit, room, fetch, what)
	var tooLarge *page.TooLargeError
	if !errors.As(err, &tooLarge) {
		return items, next, err
	}
	one, next, err := fetch(1)
	if err != nil || len(one) == 0 {
		return nil, "", err
	}
	return []T{cut(one[0], tooLarge.Size)}, next, nil
}

// readMessages is get_session's page: the messages after in's cursor
// that fit in room, and the session; a message too large for the page on
// its own comes cut (cutMessage).
func readMessages(ctx context.Context, ss sessionManager, in getSessionIn, room int) (*store.Session, []*store.Message, string, error) {
	var sess *store.Session
	msgs, next, err := fillOrCut(in.Limit, room, func(limit int) ([]*store.Message, string, error) {
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

// cutMessage returns a copy of m, whose JSON takes size bytes, with its
// parts replaced by one text part saying so and how to read it whole
// (and its metadata emptied too when the copy still does not fit room).
func cutMessage(m *store.Message, size int, in getSessionIn, room int) *store.Message {
	cut := *m
	marker := fmt.Sprintf("[message cut: it takes %d bytes of JSON, more than max_bytes %d leaves for it; read it whole with a larger max_bytes (at most %d) if it fits there, or with mcp-host sessions export %s]",
		size, in.replyBytes(), MaxReplyBytes, in.SessionID)
	cut.Parts, _ = json.Marshal([]map[string]string{{"type": "text", "text": marker}})
	if n, _, _ := page.Fit([]*store.Message{&cut}, room); n == 0 {
		cut.Metadata = json.RawMessage(`{}`)
	}
	return &cut
}
