package sqlite

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// TestWriteStateIsJSONMarshal: the streamed state is byte for byte what
// json.Marshal gives, so digests of old and new archives agree in kind.
func TestWriteStateIsJSONMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 2, 12, 0, 0, 123e6, time.UTC)
	sess := store.Session{ID: "ses_x", Title: "a <b> & c", MessageCount: 2, LastSeq: 2, CreatedAt: at, UpdatedAt: at}
	msgs := []store.Message{
		{SessionID: "ses_x", ID: "m1", Seq: 1, Role: store.RoleUser, Parts: json.RawMessage(`[ {"type": "text", "text": "<hi> & ✓"} ]`), Metadata: json.RawMessage(`{}`), CreatedAt: at},
		{SessionID: "ses_x", ID: "m2", Seq: 2, Role: store.RoleAssistant, Parts: json.RawMessage(`[{"type":"text","text":"yo"}]`), Metadata: json.RawMessage(`{"k": 1}`), CreatedAt: at},
	}
	for name, c := range map[string]struct {
		memory string
		msgs   []store.Message
	}{
		"with memory":    {memory: "summary <with> \"quotes\"", msgs: msgs},
		"without memory": {msgs: msgs},
		"no messages":    {msgs: []store.Message{}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(store.ArchiveState{Session: sess, Messages: c.msgs, Memory: c.memory})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			err = writeState(&got, archiveHead{Session: sess, Memory: c.memory}, func(yield func(*store.Message) error) error {
				for i := range c.msgs {
					if err := yield(&c.msgs[i]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("streamed state\n%s\nwant\n%s", got.Bytes(), want)
			}
		})
	}
}
