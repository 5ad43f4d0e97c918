package automations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
	"github.com/cairnhq/cairn/workflows"
)

const helloYAML = `name: hello
input:
  type: object
  properties:
    who: {type: string, default: world}
  additionalProperties: false
steps:
  - id: greet
    exec: ["echo", "hello ${{ input.who }}"]
`

// workflowService is a Service over a memory store and real workflow files.
func workflowService(t *testing.T) (*Service, string) {
	t.Helper()
	ws := t.TempDir()
	dir := filepath.Join(ws, ".cairn", "workflows")
	writeFile(t, filepath.Join(dir, "hello.yaml"), helloYAML)
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	return &Service{Store: st, LocksDir: filepath.Join(t.TempDir(), "locks"), Targets: &WorkflowTargets{Dir: dir}}, dir
}

func TestCreateRefusesBadInputAndStoresNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec Spec
		want string // in the message
	}{
		{"unknown target", Spec{Key: "k", Target: "nope", Every: "1h"}, `no workflow named "nope"`},
		{"bad cron", Spec{Key: "k", Target: "hello", Cron: "61 * * * *"}, "invalid cron"},
		{"cron that never fires", Spec{Key: "k", Target: "hello", Cron: "0 0 30 2 *"}, "never fires"},
		{"unknown zone", Spec{Key: "k", Target: "hello", Cron: "0 3 * * *", TZ: "Mars/Olympus"}, "unknown time zone"},
		{"glob with ..", Spec{Key: "k", Target: "hello", Files: []string{"src/../../etc/*"}}, "leaves the workspace"},
		{"absolute glob", Spec{Key: "k", Target: "hello", Files: []string{"/etc/*"}}, "is absolute"},
		{"url with credentials", Spec{Key: "k", Target: "hello", URL: "http://user:secret@example.com/health"}, "must not hold credentials"},
		{"url not http", Spec{Key: "k", Target: "hello", URL: "file:///etc/passwd"}, "http://"},
		{"two triggers", Spec{Key: "k", Target: "hello", Cron: "0 3 * * *", Files: []string{"*.go"}}, "not both cron and files"},
		{"no trigger", Spec{Key: "k", Target: "hello"}, "give one of cron, every, files or url"},
		{"tz without cron", Spec{Key: "k", Target: "hello", Every: "1h", TZ: "UTC"}, "tz: applies only to cron"},
		{"interval too short", Spec{Key: "k", Target: "hello", Every: "10ms"}, "below the minimum"},
		{"interval in days", Spec{Key: "k", Target: "hello", Every: "2d"}, "for days use hours"},
		{"bad key", Spec{Key: "../x", Target: "hello", Every: "1h"}, "invalid automation key"},
		{"key with NUL", Spec{Key: "a\x00b", Target: "hello", Every: "1h"}, "invalid automation key"},
		{"long key", Spec{Key: strings.Repeat("k", 1024), Target: "hello", Every: "1h"}, "longer than 128"},
		{"bad overlap", Spec{Key: "k", Target: "hello", Every: "1h", Overlap: "queue"}, "skip, allow or buffer_one"},
		{"bad missed policy", Spec{Key: "k", Target: "hello", Cron: "0 3 * * *", Missed: "all"}, "skip or once"},
		{"input not an object", Spec{Key: "k", Target: "hello", Every: "1h", Input: json.RawMessage(`[1]`)}, "must be a JSON object"},
		{"input failing the schema", Spec{Key: "k", Target: "hello", Every: "1h", Input: json.RawMessage(`{"who":3}`)}, "/who"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc, _ := workflowService(t)
			_, err := svc.Create(context.Background(), CreateParams{Owner: "cli", Spec: tc.spec})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if c, _ := svc.Store.Counts(context.Background()); c.Automations != 0 || c.Runs != 0 {
				t.Fatalf("a refused create stored %+v", c)
			}
		})
	}
}

func TestCreateIsIdempotentOnOwnerAndKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := workflowService(t)
	sp := Spec{Key: "nightly", Target: "hello", Cron: "CRON_TZ=Europe/Paris 0 3 * * 1-5", Input: json.RawMessage(`{"who": "ops"}`)}
	first, err := svc.Create(ctx, CreateParams{Owner: "mcp:editor", Spec: sp})
	if err != nil || !first.Created {
		t.Fatalf("first create: %+v, %v", first, err)
	}
	a := first.Automation
	if a.Trigger.Cron != "0 3 * * 1-5" || a.Trigger.TZ != "Europe/Paris" || a.Overlap != "skip" || a.Missed != "skip" || !a.Enabled {
		t.Fatalf("stored %+v", a)
	}
	// The same spec, written differently, returns the existing one.
	same := Spec{Key: "nightly", Target: "hello", Cron: "0   3 * * 1-5", TZ: "Europe/Paris", Input: json.RawMessage(`{"who":"ops"}`), Overlap: "skip"}
	again, err := svc.Create(ctx, CreateParams{Owner: "mcp:editor", Spec: same})
	if err != nil || again.Created || again.Automation.ID != a.ID {
		t.Fatalf("same spec again: %+v, %v", again, err)
	}
	// Another spec under the same owner and key is refused and says how.
	other := sp
	other.Cron = "CRON_TZ=Europe/Paris 0 4 * * 1-5"
	_, err = svc.Create(ctx, CreateParams{Owner: "mcp:editor", Spec: other})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrExists) || !strings.Contains(err.Error(), `trigger cron 0 3 * * 1-5 (Europe/Paris), not cron 0 4 * * 1-5 (Europe/Paris)`) {
		t.Fatalf("other spec: %v", err)
	}
	// Another owner may use the key.
	if res, err := svc.Create(ctx, CreateParams{Owner: "cli", Spec: other}); err != nil || !res.Created {
		t.Fatalf("another owner: %+v, %v", res, err)
	}
	if _, err := svc.Resolve(ctx, "nightly", ""); !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("resolving a key two owners use: %v", err)
	}
	if got, err := svc.Resolve(ctx, "nightly", "cli"); err != nil || got.Owner != "cli" {
		t.Fatalf("resolve with an owner: %+v, %v", got, err)
	}
	list, _ := svc.List(ctx, ListParams{Owner: "mcp:editor"})
	if len(list) != 1 {
		t.Fatalf("List(owner) = %d", len(list))
	}
	if _, err := svc.Create(ctx, CreateParams{Owner: store.OwnerConfig, Spec: sp}); !errors.Is(err, ErrConfigOwned) {
		t.Fatalf("create as config: %v", err)
	}
}

func TestWorkflowTargetsReloadChangedFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, dir := workflowService(t)
	tg := svc.Targets.(*WorkflowTargets)
	if _, err := tg.Prepare(ctx, "bye", nil); !errors.Is(err, workflows.ErrNotFound) {
		t.Fatalf("unknown target: %v", err)
	}
	writeFile(t, filepath.Join(dir, "bye.yaml"), "steps:\n  - id: a\n    exec: [\"true\"]\n")
	r, err := tg.Prepare(ctx, "bye", nil)
	if err != nil || r.Target != "bye" || string(r.Input) != "{}" || !strings.HasPrefix(r.ID, "run_") {
		t.Fatalf("new workflow: %+v, %v", r, err)
	}
	writeFile(t, filepath.Join(dir, "bye.yaml"), "steps: [oops")
	if _, err := tg.Prepare(ctx, "bye", nil); err == nil || !strings.Contains(err.Error(), "bye.yaml") {
		t.Fatalf("broken workflow: %v", err)
	}
}

func TestSummaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := workflowService(t)
	for _, sp := range []Spec{
		{Key: "a", Target: "hello", Every: "1h"},
		{Key: "b", Target: "hello", Cron: "0 3 * * *", TZ: "UTC"},
	} {
		if _, err := svc.Create(ctx, CreateParams{Owner: "cli", Spec: sp}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Pause(ctx, "b", "later"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sums, err := Summaries(ctx, svc.Store, now)
	if err != nil || len(sums) != 2 || sums[0].Schedule != "every 1h" || sums[1].Schedule != "cron 0 3 * * * (UTC)" || sums[1].Enabled || sums[1].Note != "later" {
		t.Fatalf("Summaries = %+v, %v", sums, err)
	}
	// The next due time is computed at once, in the automation's zone; a
	// paused automation has none.
	if d := sums[0].NextDue.Sub(now); d < 59*time.Minute || d > time.Hour+time.Second || sums[1].Zone != "UTC" || !sums[1].NextDue.IsZero() {
		t.Fatalf("next due %v from now (%+v), paused %v in %s", d, sums[0], sums[1].NextDue, sums[1].Zone)
	}
	if n, err := CountEnabled(ctx, svc.Store); err != nil || n != 1 {
		t.Fatalf("CountEnabled = %d, %v", n, err)
	}
}

func TestUpdateTakesTheEditLockAndChecksTheRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _ := workflowService(t)
	res, err := svc.Create(ctx, CreateParams{Owner: "cli", Spec: Spec{Key: "k", Target: "hello", Every: "1h"}})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Automation
	cron, tz := "30 2 * * *", "America/New_York"
	got, err := svc.Update(ctx, UpdateParams{Ref: "k", Revision: 1, Cron: &cron, TZ: &tz})
	if err != nil || got.Revision != 2 || got.Trigger.Kind != store.TriggerCron || got.Trigger.Every != "" || got.Trigger.TZ != tz {
		t.Fatalf("update to cron: %+v, %v", got, err)
	}
	every := "45m"
	if got, err := svc.Update(ctx, UpdateParams{Ref: a.ID, Every: &every}); err != nil || got.Trigger.Kind != store.TriggerInterval || got.Trigger.TZ != "" {
		t.Fatalf("update to interval: %+v, %v", got, err)
	}
	if _, err := svc.Update(ctx, UpdateParams{Ref: "k", Revision: 1, Every: &every}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("stale revision: %v", err)
	}
	bad := "0 0 30 2 *"
	if _, err := svc.Update(ctx, UpdateParams{Ref: "k", Cron: &bad}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("bad cron: %v", err)
	}
	// Another process editing it: refused, naming the holder.
	l, err := locks.TryLock(svc.LocksDir, "edit-"+a.ID)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Update(ctx, UpdateParams{Ref: "k", Every: &every})
	var el *EditLockedError
	if !errors.As(err, &el) || !errors.Is(err, locks.ErrHeld) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("update under a held edit lock: %v", err)
	}
	if _, err := svc.Delete(ctx, DeleteParams{Ref: "k"}); !errors.As(err, &el) {
		t.Fatalf("delete under a held edit lock: %v", err)
	}
	l.Unlock()
	if got, err := svc.Pause(ctx, "k", "on holiday"); err != nil || got.Enabled || got.Note != "on holiday" {
		t.Fatalf("pause: %+v, %v", got, err)
	}
	if _, err := svc.Trigger(ctx, TriggerParams{Ref: "k"}); !errors.Is(err, store.ErrPaused) || !strings.Contains(err.Error(), "on holiday") {
		t.Fatalf("trigger while paused: %v", err)
	}
	if got, err := svc.Resume(ctx, "k"); err != nil || !got.Enabled || got.Note != "" {
		t.Fatalf("resume: %+v, %v", got, err)
	}
	if _, err := svc.Delete(ctx, DeleteParams{Ref: "k", Revision: 1}); !errors.Is(err, store.ErrStale) {
		t.Fatalf("stale delete: %v", err)
	}
	if _, err := svc.Delete(ctx, DeleteParams{Ref: "k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
}
