package sessions

import (
	"encoding/json"
	"fmt"

	"github.com/cairnhq/cairn/store"
)

// CutMessage returns a copy of m, a message whose JSON takes size bytes
// and does not fit a page on its own, with its parts replaced by one text
// part saying so, followed by how, where the whole message is read (for
// example "read it whole with mcp-host sessions export ID"). A paged
// reader returns it in the message's place and goes on after it.
func CutMessage(m *store.Message, size int, how string) *store.Message {
	cut := *m
	marker := fmt.Sprintf("[message cut: it takes %d bytes of JSON, more than this page allows; %s]", size, how)
	cut.Parts, _ = json.Marshal([]map[string]string{{"type": "text", "text": marker}})
	return &cut
}
