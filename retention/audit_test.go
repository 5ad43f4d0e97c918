package retention

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func TestCollectDeletesAuditEntriesOlderThanMaxAge(t *testing.T) {
	t.Parallel()
	f := setup(t, Policy{MaxAge: 24 * time.Hour})
	ctx := context.Background()
	for _, age := range []time.Duration{72 * time.Hour, 25 * time.Hour, time.Hour} {
		if err := f.st.AppendAudit(ctx, &store.AuditEntry{At: now.Add(-age), Principal: "agent:a", Tool: "launch_run", ArgsDigest: "sha256:0", Outcome: store.AuditOK}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := f.c.Collect(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	left, err := f.st.ListAudit(ctx, store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Audit != 2 || len(left) != 1 || !left[0].At.Equal(now.Add(-time.Hour)) {
		t.Fatalf("collect deleted %d audit entries, left %d; want the two older than a day gone", rep.Audit, len(left))
	}
}
