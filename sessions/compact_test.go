package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

func TestPreviewOfALongMultibyteSummary(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; b.Len() < 100<<10; i++ {
		b.WriteString("要約の行 ✓ résumé 🙂 ")
	}
	summary := b.String()
	pointer := "Full summary: /state/memory/ses_x.md"
	for shift := range 4 { // move the cut across every byte of a character
		s := strings.Repeat("a", shift) + summary
		preview, truncated := sessions.Preview(s, pointer)
		switch {
		case !truncated:
			t.Fatal("a 100 KiB summary was not truncated")
		case len(preview) > sessions.MaxPreviewBytes:
			t.Fatalf("preview is %d bytes, limit %d", len(preview), sessions.MaxPreviewBytes)
		case len(preview) < sessions.MaxPreviewBytes-8:
			t.Fatalf("preview is %d bytes: it wastes its budget", len(preview))
		case !utf8.ValidString(preview):
			t.Fatalf("preview (shift %d) is not valid UTF-8", shift)
		case !strings.Contains(preview, "[… summary truncated:") || !strings.HasSuffix(preview, "\n\n"+pointer):
			t.Fatalf("preview lacks the marker or the pointer: ...%q", preview[len(preview)-200:])
		}
		body, _, _ := strings.Cut(preview, "\n\n[… summary truncated:")
		if !strings.HasPrefix(s, body) {
			t.Fatal("the preview's text is not a prefix of the summary")
		}
	}
	short, truncated := sessions.Preview("short ✓", pointer)
	if truncated || short != "short ✓\n\n"+pointer {
		t.Fatalf("short preview %q, %v", short, truncated)
	}
}

func TestCompactReplacesOldTurnsAndPublishesMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupCounted(t, "ses_c", 10)
	long := "long summary ✓ " + strings.Repeat("要約", 20000)
	res, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_c", Summary: long})
	if err != nil {
		t.Fatal(err)
	}
	if res.Compacted != 6 || !res.Truncated || res.PreviewBytes > sessions.MaxPreviewBytes || res.Archive.Status != store.ArchiveSucceeded || len(res.Warnings) != 0 {
		t.Fatalf("result %+v", res)
	}
	page, _ := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_c"})
	if len(page.Messages) != 5 || page.Messages[0].Role != store.RoleSystem || textOf(t, page.Messages[1]) != "m6" {
		t.Fatalf("after compaction: %d messages", len(page.Messages))
	}
	preview := textOf(t, page.Messages[0])
	if !strings.HasSuffix(preview, "Full summary: "+res.MemoryPath) || !utf8.ValidString(preview) {
		t.Fatalf("preview ends %q", preview[len(preview)-100:])
	}
	if got, _ := os.ReadFile(res.MemoryPath); string(got) != long {
		t.Fatal("the memory file does not hold the full summary")
	}
	if fi, _ := os.Stat(res.MemoryPath); fi.Mode().Perm() != 0o600 {
		t.Fatalf("memory file mode %v", fi.Mode())
	}
	_, st, err := f.m.Archive(ctx, res.Archive.ID)
	if err != nil || len(st.Messages) != 10 || st.Memory != "" {
		t.Fatalf("archive: %v, %+v", err, st)
	}

	// A second compaction archives the first summary, memory file included.
	f.say(t, "ses_c", "m10")
	res2, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_c", Summary: "second", KeepLast: intp(0)})
	if err != nil {
		t.Fatal(err)
	}
	page, _ = f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_c"})
	if len(page.Messages) != 1 || res2.Session.MessageCount != 1 || res2.Session.Summary.Compactions != 2 {
		t.Fatalf("keep 0: %d messages, session %+v", len(page.Messages), res2.Session)
	}
	_, st, _ = f.m.Archive(ctx, res2.Archive.ID)
	if st.Memory != long || len(st.Messages) != 6 {
		t.Fatalf("the second archive holds %d messages and %d bytes of memory", len(st.Messages), len(st.Memory))
	}
	if got, _ := f.m.ReadMemory("ses_c"); got != "second" {
		t.Fatalf("memory %q", got)
	}
}

// TestFailedAttemptKeepsPreviousMemory: a failure at any step before the
// commit leaves the session, the memory file and the folder as they were
// and settles the attempt as failed.
func TestFailedAttemptKeepsPreviousMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, step := range []string{"prepared", "staged"} {
		f := setupSix(t, "ses_f")
		if _, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_f", Summary: "first", KeepLast: intp(2)}); err != nil {
			t.Fatal(err)
		}
		f.say(t, "ses_f", "g", "h")
		before, _ := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_f"})
		boom := errors.New("boom")
		sessions.SetHook(f.m, func(s string) error {
			if s == step {
				return boom
			}
			return nil
		})
		_, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_f", Summary: "second", KeepLast: intp(2)})
		if !errors.Is(err, boom) {
			t.Fatalf("%s: %v", step, err)
		}
		after, _ := f.m.Read(ctx, sessions.ReadParams{SessionID: "ses_f"})
		if len(after.Messages) != len(before.Messages) || after.Session.Revision != before.Session.Revision {
			t.Fatalf("%s: the failed attempt changed the session", step)
		}
		if got, _ := f.m.ReadMemory("ses_f"); got != "first" {
			t.Fatalf("%s: memory %q after a failed attempt", step, got)
		}
		as, _ := f.m.Archives(ctx, "ses_f")
		if len(as) != 2 || as[0].Status != store.ArchiveFailed || !strings.Contains(as[0].Error, "boom") {
			t.Fatalf("%s: archives %+v", step, as[0])
		}
		if entries, _ := os.ReadDir(f.memDir); len(entries) != 1 {
			t.Fatalf("%s: %d files in the memory folder", step, len(entries))
		}
	}

	// Cancelled before the commit: the same.
	f := setupSix(t, "ses_x")
	cctx, cancel := context.WithCancel(ctx)
	sessions.SetHook(f.m, func(s string) error {
		if s == "staged" {
			cancel()
		}
		return nil
	})
	if _, err := f.m.Compact(cctx, sessions.CompactParams{SessionID: "ses_x", Summary: "never"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if _, err := os.Stat(f.m.MemoryPath("ses_x")); !os.IsNotExist(err) {
		t.Fatalf("a cancelled attempt published a memory file: %v", err)
	}
	as, _ := f.m.Archives(ctx, "ses_x")
	if len(as) != 1 || as[0].Status != store.ArchiveFailed || !strings.HasPrefix(as[0].Error, "cancelled") {
		t.Fatalf("cancelled attempt: %+v", as)
	}
}

// TestRecoverPublishesACommittedSummary: a crash between the commit and
// the publication leaves a staged file that Recover publishes.
func TestRecoverPublishesACommittedSummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setupSix(t, "ses_p")
	f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_p", Summary: "first", KeepLast: intp(1)})
	f.say(t, "ses_p", "g")
	stop := errors.New("crash here")
	sessions.SetHook(f.m, func(s string) error {
		if s == "committed" {
			return stop // Compact skips the publication, as a crash would
		}
		return nil
	})
	res, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_p", Summary: "second", KeepLast: intp(1)})
	if err != nil || len(res.Warnings) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if got, _ := f.m.ReadMemory("ses_p"); got != "first" {
		t.Fatalf("memory %q before recovery", got)
	}
	sessions.SetHook(f.m, nil)
	if err := f.m.RecoverAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.m.ReadMemory("ses_p"); got != "second" {
		t.Fatalf("memory %q after recovery, want the committed summary", got)
	}
	if entries, _ := os.ReadDir(f.memDir); len(entries) != 1 {
		t.Fatalf("%d files in the memory folder", len(entries))
	}
}

// TestRetention keeps five complete archives by default, honours the
// configured target and disables cleanup with 0.
func TestRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		max  *int
		want int
	}{{nil, sessions.DefaultMaxArchives}, {intp(2), 2}, {intp(0), 9}} {
		f := setup(t, sessions.Options{MaxArchives: c.max})
		f.create(t, "ses_k")
		for i := range 9 {
			f.say(t, "ses_k", "x", "y")
			if _, err := f.m.Compact(ctx, sessions.CompactParams{SessionID: "ses_k", Summary: fmt.Sprintf("s%d", i), KeepLast: intp(1)}); err != nil {
				t.Fatal(err)
			}
		}
		as, _ := f.m.Archives(ctx, "ses_k")
		if len(as) != c.want {
			t.Fatalf("max %v: %d archives, want %d", c.max, len(as), c.want)
		}
	}
}
