package automations

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/diskfree"
)

// TestFullDiskRefusesFires: while the state disk is nearly full a due
// slot queues no run and the automation says why; once space is back the
// next slot fires.
func TestFullDiskRefusesFires(t *testing.T) {
	t.Parallel()
	e := setup(t)
	var free atomic.Uint64
	free.Store(10 << 20)
	e.sched.cfg.DiskGuard = &diskfree.Guard{Path: e.svc.LocksDir, Measure: func(string) (diskfree.Space, error) {
		return diskfree.Space{Free: free.Load(), Total: 100 << 30}, nil
	}}
	a := e.create(Spec{Key: "k", Cron: "* * * * *", TZ: "UTC"})
	e.advanceTo(t0.Add(time.Minute))
	st := e.get(a.ID).State
	if !strings.Contains(st.LastError, "the state disk has 10 MB free") || st.Missed != 1 || e.runCount() != 0 {
		t.Fatalf("state after a fire on a full disk: %+v, %d runs", st, e.runCount())
	}
	free.Store(50 << 30)
	e.advanceTo(t0.Add(2 * time.Minute))
	if st := e.get(a.ID).State; st.Fires != 1 || st.LastError != "" || e.runCount() != 1 {
		t.Fatalf("state after space came back: %+v, %d runs", st, e.runCount())
	}
}
