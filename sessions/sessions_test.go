package sessions_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/store/sqlite"
)

func TestCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, sessions.Options{})
	s, created, err := f.m.Create(ctx, sessions.CreateParams{ID: "ses_one", Title: "Planning"})
	if err != nil || !created || s.ID != "ses_one" || s.Title != "Planning" {
		t.Fatalf("Create = %+v, %v, %v", s, created, err)
	}
	f.say(t, "ses_one", "hello")
	s, created, err = f.m.Create(ctx, sessions.CreateParams{ID: "ses_one", Title: "Other"})
	if err != nil || created || s.Title != "Planning" || s.MessageCount != 1 {
		t.Fatalf("second Create = %+v, %v, %v; want the existing session untouched", s, created, err)
	}
	gen, created, err := f.m.Create(ctx, sessions.CreateParams{})
	if err != nil || !created || !strings.HasPrefix(gen.ID, "ses_") || ids.Validate("session id", gen.ID) != nil {
		t.Fatalf("Create with a generated id = %+v, %v, %v", gen, created, err)
	}
	long := strings.Repeat("s", ids.MaxLen) // its lock name is a digest
	if _, created, err := f.m.Create(ctx, sessions.CreateParams{ID: long}); err != nil || !created {
		t.Fatalf("Create with a %d-character id: %v", ids.MaxLen, err)
	}
	if err := f.m.Delete(ctx, long); err != nil {
		t.Fatal(err)
	}
	child, _, err := f.m.Create(ctx, sessions.CreateParams{ParentID: "ses_one"})
	if err != nil || child.ParentID != "ses_one" {
		t.Fatalf("Create child = %+v, %v", child, err)
	}
}

type badCase struct {
	name    string
	do      func() error
	check   func(error) bool
	mention string
}

// TestBadInputIsRefusedAndStoresNothing: unknown sessions, roles, oversized
// messages and hostile ids get clear errors and change nothing.
func TestBadInputIsRefusedAndStoresNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, sessions.Options{})
	f.create(t, "ses_ok")
	f.say(t, "ses_ok", "first")
	big := strings.Repeat("x", 10<<20)
	var invalid *ids.InvalidError
	var limit *sessions.LimitError
	cases := []badCase{
		{"append to an unknown session", func() error {
			_, err := f.m.Append(ctx, "ses_nope", []sessions.MessageInput{sessions.TextMessage(store.RoleUser, "x")})
			return err
		}, func(err error) bool { return errors.Is(err, store.ErrNotFound) }, `no session "ses_nope"`},
		{"read an unknown session", func() error {
			_, err := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_nope"})
			return err
		}, func(err error) bool { return errors.Is(err, store.ErrNotFound) }, "ses_nope"},
		{"compact an unknown session", func() error {
			_, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_nope", Summary: "s"})
			return err
		}, func(err error) bool { return errors.Is(err, store.ErrNotFound) }, "ses_nope"},
		{"delete an unknown session", func() error { return f.m.Delete(ctx, "ses_nope") },
			func(err error) bool { return errors.Is(err, store.ErrNotFound) }, "ses_nope"},
		{"unknown role", func() error {
			_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{sessions.TextMessage(store.RoleUser, "fine"), sessions.TextMessage("narrator", "x")})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, `message 1: unknown role "narrator"`},
		{"10 MB message", func() error {
			_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{sessions.TextMessage(store.RoleUser, big)})
			return err
		}, func(err error) bool { return errors.As(err, &limit) && limit.Limit == sessions.MaxMessageBytes }, "the limit is 1 MiB (1048576 bytes) per message"},
		{"10 MB of parts", func() error {
			parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": big}})
			_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{{Role: store.RoleUser, Parts: parts}})
			return err
		}, func(err error) bool { return errors.As(err, &limit) }, "1 MiB"},
		{"5 MB in one append", func() error {
			var msgs []sessions.MessageInput
			for range 5 {
				msgs = append(msgs, sessions.TextMessage(store.RoleUser, strings.Repeat("y", 1000<<10)))
			}
			_, err := f.m.Append(ctx, "ses_ok", msgs)
			return err
		}, func(err error) bool { return errors.As(err, &limit) && limit.Limit == sessions.MaxAppendBytes }, "4 MiB (4194304 bytes) per append"},
		{"unknown part type", func() error {
			_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{{Role: store.RoleUser, Parts: json.RawMessage(`[{"type":"image"}]`)}})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, `unknown type "image"`},
		{"parts not an array", func() error {
			_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{{Role: store.RoleUser, Parts: json.RawMessage(`{"type":"text"}`)}})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, "JSON array"},
		{"metadata not an object", func() error {
			_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{{Role: store.RoleUser, Text: "x", Metadata: json.RawMessage(`[1]`)}})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, "JSON object"},
		{"no content", func() error {
			_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{{Role: store.RoleUser}})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, "no content"},
		{"empty summary", func() error {
			_, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_ok", Summary: "  "})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, "summary"},
		{"negative keep", func() error {
			_, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_ok", Summary: "s", KeepLast: intp(-1)})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, "keep_last"},
		{"nothing to compact", func() error {
			_, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_ok", Summary: "s"})
			return err
		}, func(err error) bool { return errors.As(err, new(*store.NothingToCompactError)) }, "nothing to compact"},
		{"bad cursor", func() error {
			_, err := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_ok", Cursor: "x"})
			return err
		}, func(err error) bool { return errors.Is(err, sessions.ErrInvalid) }, "cursor"},
	}
	for _, id := range []string{"a/b", "../x", "..", "a\x00b", "-x", strings.Repeat("s", 200)} {
		isInvalid := func(err error) bool { return errors.As(err, &invalid) }
		cases = append(cases,
			badCase{fmt.Sprintf("create %q", id), func() error {
				_, _, err := f.m.Create(ctx, sessions.CreateParams{ID: id})
				return err
			}, isInvalid, "invalid session id"},
			badCase{fmt.Sprintf("create with parent %q", id), func() error {
				_, _, err := f.m.Create(ctx, sessions.CreateParams{ParentID: id})
				return err
			}, isInvalid, "invalid parent session id"},
			badCase{fmt.Sprintf("append to %q", id), func() error {
				_, err := f.m.Append(ctx, id, []sessions.MessageInput{sessions.TextMessage(store.RoleUser, "x")})
				return err
			}, isInvalid, "invalid session id"},
			badCase{fmt.Sprintf("compact %q", id), func() error {
				_, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: id, Summary: "s"})
				return err
			}, isInvalid, "invalid session id"},
			badCase{fmt.Sprintf("delete %q", id), func() error { return f.m.Delete(ctx, id) }, isInvalid, "invalid session id"},
			badCase{fmt.Sprintf("message id %q", id), func() error {
				_, err := f.m.Append(ctx, "ses_ok", []sessions.MessageInput{{ID: id, Role: store.RoleUser, Text: "x"}})
				return err
			}, isInvalid, "invalid message id"},
		)
	}
	for _, c := range cases {
		err := c.do()
		if err == nil || !c.check(err) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: got %v; want an error mentioning %q", c.name, err, c.mention)
		}
	}
	// Nothing was stored: one session, one message, no archives, no files.
	page, err := f.m.List(ctx, sessions.ListParams{})
	if err != nil || len(page.Sessions) != 1 {
		t.Fatalf("sessions after bad input: %+v, %v", page, err)
	}
	s := page.Sessions[0]
	if s.MessageCount != 1 || s.LastSeq != 1 || s.Revision != 2 {
		t.Fatalf("session after bad input: %+v", s)
	}
	if as, _ := f.m.Archives(ctx, "ses_ok"); len(as) != 0 {
		t.Fatalf("bad input left %d archives", len(as))
	}
	if entries, _ := os.ReadDir(f.memDir); len(entries) != 0 {
		t.Fatalf("bad input left files in the memory folder")
	}
}

func TestReadPagesAndList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupCounted(t, "ses_r", 25)
	var got []string
	cursor := ""
	pages := 0
	for {
		page, err := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_r", Cursor: cursor, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, m := range page.Messages {
			got = append(got, textOf(t, m))
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if pages != 3 || len(got) != 25 || got[0] != "m0" || got[24] != "m24" {
		t.Fatalf("%d pages: %v", pages, got)
	}
	if _, err := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_r", Limit: sessions.MaxPageLimit + 1}); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("limit over the maximum: %v", err)
	}

	for i := range 5 {
		f.create(t, fmt.Sprintf("ses_l%d", i))
	}
	var ids []string
	cursor = ""
	for {
		page, err := f.m.List(ctx, sessions.ListParams{Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sessions {
			ids = append(ids, s.ID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if len(ids) != 6 || ids[5] != "ses_r" {
		t.Fatalf("listed %v; want 6, oldest (ses_r) last", ids)
	}
}

func TestDeleteRemovesEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupSix(t, "ses_d")
	if _, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_d", Summary: "gone soon"}); err != nil {
		t.Fatal(err)
	}
	// A staged leftover of a crashed attempt goes too.
	os.WriteFile(filepath.Join(f.memDir, "ses_d.md.staged-"+ids.New("arc")), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(f.memDir, "ses_d.md.staged-x.md"), []byte("another session's memory"), 0o600)
	if err := f.m.Delete(ctx, "ses_d"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.m.Get(ctx, "ses_d"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
	entries, _ := os.ReadDir(f.memDir)
	if len(entries) != 1 || entries[0].Name() != "ses_d.md.staged-x.md" {
		t.Fatalf("memory folder after delete: %v", entries)
	}
	if c, _ := f.st.Counts(ctx); c.Sessions != 0 {
		t.Fatalf("%d sessions left", c.Sessions)
	}
}

// TestMemoryBackend: the dry-run configuration (memory store, no folders)
// supports the whole API.
func TestMemoryBackend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := sessions.New(memory.New(), sessions.Options{})
	if _, _, err := m.Create(ctx, sessions.CreateParams{ID: "ses_dry"}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		m.Append(ctx, "ses_dry", []sessions.MessageInput{sessions.TextMessage(store.RoleUser, fmt.Sprint(i))})
	}
	res, err := m.Compact(ctx, sessions.CompactParams{SessionID: "ses_dry", Summary: "dry"})
	if err != nil || res.MemoryPath != "" || res.Compacted != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	page, _ := m.Read(ctx, sessions.ReadParams{SessionID: "ses_dry"})
	if !strings.Contains(textOf(t, page.Messages[0]), "not written in a dry run") {
		t.Fatalf("dry-run preview: %q", textOf(t, page.Messages[0]))
	}
	if err := m.Delete(ctx, "ses_dry"); err != nil {
		t.Fatal(err)
	}
}

// TestAppendOutlastsALockedDatabase: while another connection holds the
// write lock longer than the store's busy timeout, an append fails with
// SQLITE_BUSY (not committed) and is tried again until it lands.
func TestAppendOutlastsALockedDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupStore(t, sessions.Options{}, sqlite.Options{BusyTimeout: 20 * time.Millisecond})
	m := f.m
	f.create(t, "ses_busy")
	other, err := sql.Open("sqlite", "file:"+f.db+"?_pragma=busy_timeout(5000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tx, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("UPDATE sessions SET title = 'held' WHERE id = 'ses_busy'"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.Append(ctx, "ses_busy", []sessions.MessageInput{sessions.TextMessage(store.RoleUser, "waited")})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // several busy timeouts: the append is refused and retried
	select {
	case err := <-done:
		t.Fatalf("the append returned while the database was locked: %v", err)
	default:
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if s, _ := m.Get(ctx, "ses_busy"); s.MessageCount != 1 || s.Title != "held" {
		t.Fatalf("session %+v", s)
	}
}

func TestExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t, sessions.Options{})
	if _, _, err := f.m.Create(ctx, sessions.CreateParams{ID: "ses_e", Title: "Export me"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.m.Append(ctx, "ses_e", []sessions.MessageInput{
		sessions.TextMessage(store.RoleUser, "What is the weather?"),
		{Role: store.RoleAssistant, Parts: json.RawMessage(`[{"type":"text","text":"Let me look."},{"type":"tool_call","id":"c1","name":"weather","input":{"city":"Oslo"}}]`)},
		{Role: store.RoleTool, Parts: json.RawMessage(`[{"type":"tool_result","tool_call_id":"c1","content":"sunny"}]`), Metadata: json.RawMessage(`{"ms": 12}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := f.m.Export(ctx, &js, sessions.ExportParams{SessionID: "ses_e", Format: sessions.FormatJSON}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Format   string
		Session  store.Session
		Messages []store.Message
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, js.String())
	}
	if doc.Format != sessions.ExportVersion || doc.Session.Title != "Export me" || len(doc.Messages) != 3 || string(doc.Messages[2].Metadata) != `{"ms":12}` {
		t.Fatalf("JSON export %+v", doc)
	}
	var md bytes.Buffer
	if err := f.m.Export(ctx, &md, sessions.ExportParams{SessionID: "ses_e", Format: sessions.FormatMarkdown}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Export me", "## 1 · user", "What is the weather?", "**Tool call** `weather` (id `c1`)", `"city": "Oslo"`, "**Tool result** for `c1`", "sunny"} {
		if !strings.Contains(md.String(), want) {
			t.Fatalf("Markdown export lacks %q:\n%s", want, md.String())
		}
	}
	var tr bytes.Buffer
	page, _ := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_e"})
	sessions.Transcript(&tr, page.Session, page.Messages)
	for _, want := range []string{`session ses_e "Export me" · 3 message(s)`, "#2 assistant", "→ tool call weather [c1] {\"city\":\"Oslo\"}", "← tool result [c1] sunny"} {
		if !strings.Contains(tr.String(), want) {
			t.Fatalf("transcript lacks %q:\n%s", want, tr.String())
		}
	}
	if err := f.m.Export(ctx, &md, sessions.ExportParams{SessionID: "ses_e", Format: "pdf"}); !errors.Is(err, sessions.ErrInvalid) {
		t.Fatalf("format pdf: %v", err)
	}
}

// The Manager's writes carry its clock's time: a session created, appended
// to and compacted (once failing, once succeeding) on a fake clock has only
// fake timestamps.
func TestWritesCarryTheManagerClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	created := time.Date(2031, 3, 4, 5, 6, 7, 8e6, time.UTC)
	clk := clock.NewFake(created)
	f := setup(t, sessions.Options{Clock: clk})
	f.create(t, "ses_clock")

	appended := created.Add(time.Minute)
	clk.Set(appended)
	f.say(t, "ses_clock", "one", "two", "three")
	s, err := f.m.Get(ctx, "ses_clock")
	if err != nil {
		t.Fatal(err)
	}
	if !s.CreatedAt.Equal(created) || !s.UpdatedAt.Equal(appended) {
		t.Fatalf("session after the append: %+v", s)
	}
	page, err := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_clock"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Messages) != 3 {
		t.Fatalf("messages: %+v", page.Messages)
	}
	for _, m := range page.Messages {
		if !m.CreatedAt.Equal(appended) {
			t.Fatalf("message %d created at %v, want %v", m.Seq, m.CreatedAt, appended)
		}
	}

	failed := appended.Add(time.Minute)
	clk.Set(failed)
	boom := errors.New("boom")
	sessions.SetHook(f.m, func(step string) error {
		if step == "staged" {
			return boom
		}
		return nil
	})
	if _, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_clock", Summary: "s", KeepLast: intp(1)}); !errors.Is(err, boom) {
		t.Fatalf("compaction failing when staged: %v", err)
	}
	sessions.SetHook(f.m, nil)

	compacted := failed.Add(time.Minute)
	clk.Set(compacted)
	res, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_clock", Summary: "s", KeepLast: intp(1)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Archive.CreatedAt.Equal(compacted) || !res.Archive.SettledAt.Equal(compacted) || !res.Session.UpdatedAt.Equal(compacted) {
		t.Fatalf("compaction: archive %+v, session %+v", res.Archive, res.Session)
	}
	archives, err := f.m.Archives(ctx, "ses_clock")
	if err != nil {
		t.Fatal(err)
	}
	var sawFailed bool
	for _, a := range archives {
		if a.Status == store.ArchiveFailed {
			sawFailed = true
			if !a.CreatedAt.Equal(failed) || !a.SettledAt.Equal(failed) {
				t.Fatalf("failed archive: %+v", a)
			}
		}
	}
	if !sawFailed {
		t.Fatalf("no failed archive in %+v", archives)
	}
}
