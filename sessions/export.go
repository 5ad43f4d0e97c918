package sessions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store"
)

// Export formats.
const (
	FormatJSON     = "json"
	FormatMarkdown = "md"
)

// ExportVersion names the JSON export's layout.
const ExportVersion = "cairn.session.v1"

// ExportParams select what to export and how.
type ExportParams struct {
	SessionID string
	// Format is FormatJSON (the default) or FormatMarkdown.
	Format string
}

// Export writes a whole session to w: JSON ({"format", "session",
// "memory", "messages"}) or a readable Markdown transcript. Messages are
// read a page at a time, so a long session is never held in memory whole;
// appends made meanwhile may or may not be included.
func (m *Manager) Export(ctx context.Context, w io.Writer, p ExportParams) error {
	if err := ids.Validate("session id", p.SessionID); err != nil {
		return err
	}
	if p.Format == "" {
		p.Format = FormatJSON
	}
	if p.Format != FormatJSON && p.Format != FormatMarkdown {
		return invalidf("format", "%q is not json or md", p.Format)
	}
	sess, err := m.st.GetSession(ctx, p.SessionID)
	if err != nil {
		return err
	}
	memory, err := m.readMemory(ctx, p.SessionID)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if p.Format == FormatMarkdown {
		err = m.exportMarkdown(ctx, bw, sess, memory)
	} else {
		err = m.exportJSON(ctx, bw, sess, memory)
	}
	if err != nil {
		return fmt.Errorf("export session %s: %w", p.SessionID, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export session %s: %w", p.SessionID, err)
	}
	return nil
}

func (m *Manager) exportJSON(ctx context.Context, w *bufio.Writer, sess *store.Session, memory string) error {
	head, err := json.Marshal(struct {
		Format  string         `json:"format"`
		Session *store.Session `json:"session"`
		Memory  string         `json:"memory,omitempty"`
	}{ExportVersion, sess, memory})
	if err != nil {
		return err
	}
	// Splice the messages array into the object, one message a line.
	w.Write(head[:len(head)-1])
	w.WriteString(`,"messages":[`)
	n := 0
	err = m.each(ctx, sess.ID, func(msg *store.Message) error {
		b, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		if n > 0 {
			w.WriteByte(',')
		}
		n++
		w.WriteString("\n")
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.WriteString("\n]}\n")
	return err
}

func (m *Manager) exportMarkdown(ctx context.Context, w *bufio.Writer, sess *store.Session, memory string) error {
	title := sess.Title
	if title == "" {
		title = "Session " + sess.ID
	}
	fmt.Fprintf(w, "# %s\n\n", title)
	fmt.Fprintf(w, "- id: `%s`\n", sess.ID)
	if sess.ParentID != "" {
		fmt.Fprintf(w, "- parent: `%s`\n", sess.ParentID)
	}
	fmt.Fprintf(w, "- created: %s\n- updated: %s\n- messages: %d\n", stamp(sess.CreatedAt), stamp(sess.UpdatedAt), sess.MessageCount)
	if sess.Summary.Compactions > 0 {
		fmt.Fprintf(w, "- compacted: %d time(s), last %s\n", sess.Summary.Compactions, stamp(sess.Summary.CompactedAt))
	}
	w.WriteString("\n")
	if memory != "" {
		fmt.Fprintf(w, "## Memory\n\n%s\n\n", strings.TrimRight(memory, "\n"))
	}
	// Every block ends with a blank line.
	return m.each(ctx, sess.ID, func(msg *store.Message) error {
		fmt.Fprintf(w, "## %d · %s · %s\n\n", msg.Seq, msg.Role, stamp(msg.CreatedAt))
		for _, part := range decodeParts(msg.Parts) {
			switch part.Type {
			case PartText:
				fmt.Fprintf(w, "%s\n\n", strings.TrimRight(part.Text, "\n"))
			case PartToolCall:
				fmt.Fprintf(w, "**Tool call** `%s`%s\n\n%s\n", part.Name, idNote(" (id `%s`)", part.ID), fence("json", part.Input))
			case PartToolResult:
				label := "**Tool result**"
				if part.IsError {
					label = "**Tool error**"
				}
				fmt.Fprintf(w, "%s%s\n\n%s\n", label, idNote(" for `%s`", part.ToolCallID), fence("", part.Content))
			default:
				fmt.Fprintf(w, "%s\n", fence("json", part.Raw))
			}
		}
		if len(msg.Metadata) > 2 {
			fmt.Fprintf(w, "<details><summary>metadata</summary>\n\n%s\n</details>\n\n", fence("json", msg.Metadata))
		}
		return nil
	})
}

// Transcript writes a session and messages as people read them, for
// `mcp-host sessions show`.
func Transcript(w io.Writer, sess *store.Session, msgs []*store.Message) error {
	bw := bufio.NewWriter(w)
	title := ""
	if sess.Title != "" {
		title = fmt.Sprintf(" %q", sess.Title)
	}
	fmt.Fprintf(bw, "session %s%s · %d message(s) · created %s\n", sess.ID, title, sess.MessageCount, stamp(sess.CreatedAt))
	if sess.ParentID != "" {
		fmt.Fprintf(bw, "parent %s\n", sess.ParentID)
	}
	if sess.Summary.Compactions > 0 {
		fmt.Fprintf(bw, "compacted %d time(s), last %s\n", sess.Summary.Compactions, stamp(sess.Summary.CompactedAt))
	}
	for _, msg := range msgs {
		fmt.Fprintf(bw, "\n#%d %s · %s\n", msg.Seq, msg.Role, stamp(msg.CreatedAt))
		for _, part := range decodeParts(msg.Parts) {
			switch part.Type {
			case PartText:
				bw.WriteString(indent(part.Text))
			case PartToolCall:
				fmt.Fprintf(bw, "  → tool call %s%s %s\n", part.Name, idNote(" [%s]", part.ID), oneLine(part.Input))
			case PartToolResult:
				label := "result"
				if part.IsError {
					label = "error"
				}
				fmt.Fprintf(bw, "  ← tool %s%s %s\n", label, idNote(" [%s]", part.ToolCallID), oneLine(part.Content))
			default:
				fmt.Fprintf(bw, "  %s\n", oneLine(part.Raw))
			}
		}
	}
	return bw.Flush()
}

type part struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Input      json.RawMessage `json:"input"`
	ToolCallID string          `json:"tool_call_id"`
	Content    json.RawMessage `json:"content"`
	IsError    bool            `json:"is_error"`
	Raw        json.RawMessage `json:"-"`
}

func decodeParts(raw json.RawMessage) []part {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return []part{{Raw: raw}}
	}
	out := make([]part, len(list))
	for i, r := range list {
		json.Unmarshal(r, &out[i])
		out[i].Raw = r
	}
	return out
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

func idNote(format, id string) string {
	if id == "" {
		return ""
	}
	return fmt.Sprintf(format, id)
}

// fence wraps JSON (or a JSON string, shown as its text) in a code block.
func fence(lang string, raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		lang = ""
	} else {
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") == nil {
			s = buf.String()
		} else {
			s = string(raw)
		}
	}
	ticks := "```"
	for strings.Contains(s, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + ticks + "\n"
}

func indent(text string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + line + "\n")
	}
	return b.String()
}

// oneLine shows JSON (or a JSON string's text) on one line, cut at 200
// characters.
func oneLine(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			s = buf.String()
		} else {
			s = string(raw)
		}
	}
	return text.OneLine(s, 200)
}
