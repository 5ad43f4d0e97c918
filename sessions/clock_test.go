package sessions_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

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
