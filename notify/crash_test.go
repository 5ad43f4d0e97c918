package notify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/internal/testws"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// receiver is the webhook server: it refuses (500) until accept is
// called, then counts the deliveries it accepted, in all and by
// Idempotency-Key.
type receiver struct {
	mu       sync.Mutex
	open     bool
	refused  int
	accepted int
	byKey    map[string]int
	first    chan struct{} // closed at the first request
	once     sync.Once
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.once.Do(func() { close(r.first) })
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.open {
		r.refused++
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.accepted++
	r.byKey[req.Header.Get("Idempotency-Key")]++
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) accept() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.open = true
}

// A failed run's webhook reaches the server exactly once, although the
// sender was SIGKILLed between its attempts and another process sent it.
func TestWebhookOnceAcrossSIGKILL(t *testing.T) {
	t.Parallel()
	recv := &receiver{byKey: map[string]int{}, first: make(chan struct{})}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	ws := testws.New(t, map[string]string{"fails.yaml": "steps:\n  - id: ping\n    exec: [\"false\"]\n"})
	config := "notify:\n  webhook:\n    url: " + srv.URL + "/hook\n    timeout: 5s\n"
	if err := os.WriteFile(filepath.Join(ws.DefsDir(), "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"CAIRN_TEST_WS=" + ws.Root, "CAIRN_TEST_STATE=" + filepath.Dir(ws.StateDir)}

	sender := reexec.Start(t, reexec.Params{Env: append(env, "CAIRN_NOTIFY_CHILD=fail")})
	if got := sender.Line(t); got != "ready" {
		t.Fatalf("sender: %q", got)
	}
	select {
	case <-recv.first:
	case <-time.After(60 * time.Second):
		t.Fatal("no webhook attempt came")
	}
	st := testws.Store(t, ws, sqlite.Options{})
	row := waitRow(t, st, func(n *store.Notification) bool { return n.Attempts >= 1 })
	if !strings.HasPrefix(row.ID, "run.failed:run_") || !strings.HasSuffix(row.ID, "/webhook") || row.State != store.NotifyPending || row.LastError != "post webhook: HTTP 500" {
		t.Fatalf("after the refused attempt: %+v", row)
	}
	// Between attempts: the failure is recorded, the next one not due.
	if err := sender.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = sender.Cmd.Wait()
	recv.accept()

	next := reexec.Start(t, reexec.Params{Env: append(env, "CAIRN_NOTIFY_CHILD=send")})
	if got := next.Line(t); got != "ready" {
		t.Fatalf("second sender: %q", got)
	}
	sent := waitRow(t, st, func(n *store.Notification) bool { return n.State == store.NotifySent })
	if err := next.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := next.Cmd.Wait(); err != nil {
		t.Fatalf("second sender: %v", err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if recv.accepted != 1 || recv.byKey[sent.ID] != 1 || len(recv.byKey) != 1 {
		t.Fatalf("accepted %d deliveries, by key %v; want exactly one of %s", recv.accepted, recv.byKey, sent.ID)
	}
	if recv.refused < 1 || sent.Attempts != recv.refused+1 {
		t.Fatalf("%d refused attempts, row says %d attempts in all", recv.refused, sent.Attempts)
	}
}

// waitRow waits (a generous deadline, not a timing assertion) until the
// outbox's only row satisfies cond, and returns it.
func waitRow(t *testing.T, st store.Store, cond func(*store.Notification) bool) *store.Notification {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ns, err := st.Notifications(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ns) > 1 {
			t.Fatalf("%d outbox rows, want one: %+v", len(ns), ns)
		}
		if len(ns) == 1 && cond(ns[0]) {
			return ns[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting; rows: %+v", ns)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
