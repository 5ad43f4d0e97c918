package sessions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
)

// child is a re-executed test binary running one of runChild's modes.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *strings.Builder
	ready  bool // it said "ready"
}

func startChild(t *testing.T, mode string, env ...string) *child {
	t.Helper()
	stderr := &strings.Builder{}
	c := reexec.Start(t, reexec.Params{Env: append([]string{"CAIRN_SESSIONS_CHILD=" + mode}, env...), Args: []string{"-test.run=^$"}, Stderr: stderr})
	return &child{cmd: c.Cmd, stdin: c.Stdin, stdout: c.Stdout, stderr: stderr}
}

// start tells a child waiting after "ready" to go.
func (c *child) start(t *testing.T) {
	t.Helper()
	if !c.ready {
		c.expect(t, "ready")
	}
	if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
		t.Fatalf("start child: %v", err)
	}
}

// expect reads the child's next stdout line and checks its first word.
func (c *child) expect(t *testing.T, word string) string {
	t.Helper()
	line, err := c.stdout.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, word) {
		c.cmd.Wait()
		t.Fatalf("child said %q (%v), want %q; stderr: %s", line, err, word, c.stderr.String())
	}
	c.ready = c.ready || word == "ready"
	return strings.TrimSpace(line)
}

// TestAppendFromManyProcesses: 8 processes append 120 messages each (500
// under CAIRN_SOAK), one per call, to one session at once: every message
// lands exactly once and each process's messages keep their order.
func TestAppendFromManyProcesses(t *testing.T) {
	t.Parallel()
	const procs = 8
	each := reexec.Soak(120, 500)
	ctx := context.Background()
	f := setup(t, sessions.Options{})
	m, db := f.m, f.db
	f.create(t, "ses_many")
	children := make([]*child, procs)
	for p := range procs {
		children[p] = startChild(t, "append", "CAIRN_DB="+db, "CAIRN_SESSION=ses_many", fmt.Sprintf("CAIRN_PROC=%d", p), fmt.Sprintf("CAIRN_COUNT=%d", each))
	}
	for _, c := range children { // all start together
		c.expect(t, "ready")
	}
	for _, c := range children {
		c.start(t)
	}
	for p, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v; stderr: %s", p, err, c.stderr.String())
		}
	}

	sess, err := m.Get(ctx, "ses_many")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(procs * each); sess.MessageCount != want || sess.LastSeq != want {
		t.Fatalf("session says %d messages (last seq %d), want %d", sess.MessageCount, sess.LastSeq, procs*each)
	}
	next := make([]int, procs)
	seen := 0
	cursor := ""
	for {
		page, err := m.Read(ctx, sessions.ReadParams{SessionID: "ses_many", Cursor: cursor, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range page.Messages {
			seen++
			if msg.Seq != int64(seen) {
				t.Fatalf("message %d has seq %d", seen, msg.Seq)
			}
			var meta struct{ Proc, I int }
			if err := json.Unmarshal(msg.Metadata, &meta); err != nil {
				t.Fatal(err)
			}
			if meta.I != next[meta.Proc] {
				t.Fatalf("process %d: message %d arrived where %d was due (lost, duplicated or reordered)", meta.Proc, meta.I, next[meta.Proc])
			}
			next[meta.Proc]++
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	if seen != procs*each {
		t.Fatalf("read %d messages, want %d", seen, procs*each)
	}
	for p, n := range next {
		if n != each {
			t.Fatalf("process %d: %d messages stored, want %d", p, n, each)
		}
	}
}

// crashSteps are the steps of Compact a child kills itself at, once each,
// before the random kills.
var crashSteps = []string{"locked", "prepared", "staged", "committed", "published"}

// TestCompactionSurvivesSIGKILL kills a compacting child at every step and
// then at random moments. After each kill: the session is wholly the old
// state or wholly the new one; every archive left is complete and
// consistent; the memory file is absent, the previous full summary or the
// new one, never torn; retention holds; and Recover publishes a committed
// summary that the kill kept from being published.
func TestCompactionSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	randomKills := reexec.Soak(20, 200) // 200 in CI's soak
	ctx := context.Background()
	f := setup(t, sessions.Options{})
	m, st, dir, db, memDir, locksDir := f.m, f.st, f.dir, f.db, f.memDir, f.locksDir
	const id = "ses_crash"
	f.create(t, id)
	memPath := m.MemoryPath(id)

	var (
		memory   *string // the published full summary; nil while there is none
		window   time.Duration
		outcomes = map[string]int{}
	)
	iterations := len(crashSteps) + 1 + randomKills // one calibration run
	sumFile := filepath.Join(dir, "summary.txt")
	// Children are started a few iterations ahead: starting one (a
	// race-enabled binary opening the store) takes longer than a
	// compaction, and they wait for "go" before they touch the session.
	const ahead = 2
	var queued []*child
	for i := range iterations {
		for n := len(queued); n <= ahead && i+n < iterations; n++ {
			env := []string{"CAIRN_DB=" + db, "CAIRN_SESSION=" + id, "CAIRN_MEMORY=" + memDir, "CAIRN_LOCKS=" + locksDir, "CAIRN_SUMMARY_FILE=" + sumFile}
			if i+n < len(crashSteps) {
				env = append(env, "CAIRN_CRASH_AT="+crashSteps[i+n])
			}
			queued = append(queued, startChild(t, "compact", env...))
		}
		c := queued[0]
		queued = queued[1:]
		if len(queued) > 0 {
			// The next child has started up: a compaction then always
			// shares the machine with one child starting, the calibration
			// run's as well.
			queued[0].expect(t, "ready")
		}
		var texts []sessions.MessageInput
		for k := range 3 {
			texts = append(texts, sessions.TextMessage(store.RoleUser, fmt.Sprintf("turn %d.%d", i, k)))
		}
		if _, err := m.Append(ctx, id, texts); err != nil {
			t.Fatal(err)
		}
		before := readAll(t, m, id)
		summary := makeSummary(i)
		if err := os.WriteFile(sumFile, []byte(summary), 0o600); err != nil {
			t.Fatal(err)
		}
		c.start(t)
		start := time.Now()
		switch {
		case i < len(crashSteps): // it kills itself
		case i == len(crashSteps): // calibration: let it finish
		default:
			// A random moment within the time a compaction takes.
			time.Sleep(rand.N(window + time.Millisecond))
			c.cmd.Process.Signal(syscall.SIGKILL)
		}
		err := c.cmd.Wait()
		if i == len(crashSteps) {
			if err != nil {
				t.Fatalf("calibration run: %v; stderr: %s", err, c.stderr.String())
			}
			window = time.Since(start) * 3 / 2
			t.Logf("a compaction takes about %v; killing within %v", time.Since(start), window)
		}
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() != -1 {
			t.Fatalf("iteration %d: child failed: %v; stderr: %s", i, err, c.stderr.String())
		}

		// Wholly old or wholly new.
		after := readAll(t, m, id)
		keep := sessions.DefaultKeepLast
		preview, _ := sessions.Preview(summary, "Full summary: "+memPath)
		state := ""
		switch {
		case slices.Equal(after, before):
			state = "old"
		case len(after) == keep+1 && after[0].text == preview && after[0].role == store.RoleSystem &&
			after[0].seq == before[len(before)-keep-1].seq && slices.Equal(after[1:], before[len(before)-keep:]):
			state = "new"
		default:
			t.Fatalf("iteration %d: the session is neither the old state nor the new one:\nbefore %v\nafter  %v", i, before, after)
		}
		outcomes[state]++
		if i < len(crashSteps) {
			want := map[string]string{"locked": "old", "prepared": "old", "staged": "old", "committed": "new", "published": "new"}[crashSteps[i]]
			if state != want {
				t.Fatalf("killed at %s: the session is in the %s state, want %s", crashSteps[i], state, want)
			}
		}

		// Archives: complete and consistent, or absent; retention holds.
		archives, err := m.Archives(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		complete := 0
		for _, a := range archives {
			full, st, err := m.Archive(ctx, a.ID)
			if err != nil {
				t.Fatalf("iteration %d: archive %s: %v", i, a.ID, err)
			}
			if full.CutSeq <= 0 || int64(len(st.Messages)) != full.MessageCount || st.Messages[len(st.Messages)-1].Seq < full.CutSeq {
				t.Fatalf("iteration %d: archive %s is inconsistent: %+v", i, a.ID, full)
			}
			if a.Complete() {
				complete++
			}
		}
		if len(archives) > 0 && archives[0].Status == store.ArchivePrepared {
			outcomes["killed mid-attempt"]++
		}
		if complete > sessions.DefaultMaxArchives {
			t.Fatalf("iteration %d: %d complete archives, target %d", i, complete, sessions.DefaultMaxArchives)
		}

		// The memory file: absent, the previous summary or the new one.
		got, err := os.ReadFile(memPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if memory != nil {
				t.Fatalf("iteration %d: the memory file vanished", i)
			}
		case err != nil:
			t.Fatal(err)
		case string(got) == summary:
		case memory != nil && string(got) == *memory:
		default:
			t.Fatalf("iteration %d: the memory file is torn or stale (%d bytes, starts %q)", i, len(got), string(got[:min(len(got), 40)]))
		}
		if state == "new" && string(got) != summary {
			outcomes["committed, not yet published"]++
		}
		if string(got) == summary && state == "old" {
			t.Fatalf("iteration %d: the new summary was published but the session was not compacted", i)
		}

		// Recover publishes a committed summary and clears staged files.
		if err := m.Recover(ctx, id); err != nil {
			t.Fatal(err)
		}
		if state == "new" {
			memory = &summary
		}
		if got, _ := os.ReadFile(memPath); memory != nil && string(got) != *memory {
			t.Fatalf("iteration %d: after Recover the memory file is not the current summary", i)
		}
		if entries, _ := os.ReadDir(memDir); len(entries) > 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("iteration %d: after Recover the memory folder holds %v", i, names)
		}
	}
	if err := st.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["old"] == 0 || outcomes["new"] == 0 {
		t.Fatalf("the kills never left one of the states: %v", outcomes)
	}
}

// makeSummary returns a distinct summary; every fourth one is longer than
// a preview can hold and multibyte.
func makeSummary(i int) string {
	s := fmt.Sprintf("summary #%d\n", i)
	if i%4 == 3 {
		return s + strings.Repeat("résumé ✓ 要約 ", 3000)
	}
	return s + strings.Repeat(fmt.Sprintf("line %d of the summary\n", i), 20)
}

type msgView struct {
	seq  int64
	role store.Role
	text string
}

func (v msgView) String() string { return fmt.Sprintf("%d:%s:%.20q", v.seq, v.role, v.text) }

func readAll(t *testing.T, m *sessions.Manager, id string) []msgView {
	t.Helper()
	var out []msgView
	cursor := ""
	for {
		page, err := m.Read(context.Background(), sessions.ReadParams{SessionID: id, Cursor: cursor, Limit: sessions.MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range page.Messages {
			var parts []struct{ Text string }
			if err := json.Unmarshal(msg.Parts, &parts); err != nil || len(parts) != 1 {
				t.Fatalf("message %d: %s", msg.Seq, msg.Parts)
			}
			out = append(out, msgView{msg.Seq, msg.Role, parts[0].Text})
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}
