package store

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestWriteArchiveStateIsMarshal: the streamed JSON is byte for byte what
// json.Marshal gives, so digests taken either way agree.
func TestWriteArchiveStateIsMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	sess := Session{ID: "ses_a", Title: "<t> & \u2028", MessageCount: 2, LastSeq: 2, Revision: 3, CreatedAt: at, UpdatedAt: at}
	msgs := []Message{
		{SessionID: "ses_a", ID: "m1", Seq: 1, Role: RoleUser, Parts: json.RawMessage(`[{"type":"text","text":"a<b"}]`), Metadata: json.RawMessage(`{}`), CreatedAt: at},
		{SessionID: "ses_a", ID: "m2", Seq: 2, Role: RoleTool, Parts: json.RawMessage(`[ {"type": "tool_result"} ]`), Metadata: json.RawMessage(`{"k":1}`), CreatedAt: at},
	}
	for _, tc := range []struct {
		name   string
		msgs   []Message
		memory string
	}{
		{"messages and memory", msgs, "full summary with \"quotes\" & <tags>"},
		{"no memory", msgs, ""},
		{"no messages", []Message{}, "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(ArchiveState{Session: sess, Messages: tc.msgs, Memory: tc.memory})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			err = WriteArchiveState(&got, sess, tc.memory, func(yield func(*Message) error) error {
				for i := range tc.msgs {
					if err := yield(&tc.msgs[i]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("streamed\n%s\nmarshalled\n%s", got.Bytes(), want)
			}
		})
	}
}
