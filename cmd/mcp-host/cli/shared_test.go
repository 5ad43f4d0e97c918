package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/pgtest"
	"github.com/cairnhq/cairn/internal/syncbuf"
)

// machine is a workspace folder and state root standing for one machine
// of a team: its own paths, the same workflows and config (one PostgreSQL
// database, one workspace_id) as the others.
type machine struct {
	t           *testing.T
	root, state string
	url, wsID   string // the shared database and workspace_id
}

func newMachines(t *testing.T, n int, workflows map[string]string) []*machine {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	// A password the server (trust auth) ignores and no output may show.
	u.User = url.UserPassword(u.User.Username(), sharedPassword)
	wsID := strings.ReplaceAll(pgtest.WorkspaceID(), "_", "-")
	config := fmt.Sprintf("workspace_id: %s\nstore:\n  url: %q\n", wsID, u.String())
	var out []*machine
	// Hosts started on their own (the worker a serve hands its runs to)
	// are no child of the test; they end before the database does, or
	// they would outlive the test holding its output open.
	t.Cleanup(func() {
		for _, m := range out {
			killStrays(t, m.state)
		}
	})
	for range n {
		m := &machine{t: t, root: t.TempDir(), state: filepath.Join(t.TempDir(), "state"), url: u.String(), wsID: wsID}
		dir := filepath.Join(m.root, ".cairn", "workflows")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, body := range workflows {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(m.root, ".cairn", "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// sharedPassword is in the machines' database URL.
const sharedPassword = "pw-never-shown"

// command is mcp-host (this test binary standing in for it) as a process
// on machine m.
func (m *machine) command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"--state", m.state, "--workspace", m.root}, args...)...)
	cmd.Env = os.Environ() // CAIRN_CLI_MAIN=1: see TestMain
	return cmd
}

// output runs mcp-host on m to its end and returns its stdout; a failure
// fails the test.
func (m *machine) output(args ...string) string {
	m.t.Helper()
	var out, errb bytes.Buffer
	cmd := m.command(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		m.t.Fatalf("mcp-host %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// sharedLinesYAML waits for its gate file, then prints 500 numbered lines.
const sharedLinesYAML = `
input:
  gate: {type: string}
steps:
  - id: lines
    shell: |
      while [ ! -e "$GATE" ]; do sleep 0.02; done
      i=1; while [ $i -le 500 ]; do echo "line-$i"; i=$((i+1)); done
    env: {GATE: "${{ input.gate }}"}
`

// TestWatchFromAnotherMachine: two machines (separate workspace folders
// and state roots, one PostgreSQL database, one workspace_id). A run
// launched and executed on the first prints 500 lines once the second is
// watching it; the second's watch, a separate process, prints every line
// in order and exits 0, and its runs show reads the run as succeeded.
func TestWatchFromAnotherMachine(t *testing.T) {
	t.Parallel()
	ms := newMachines(t, 2, map[string]string{"lines.yaml": sharedLinesYAML})
	a, b := ms[0], ms[1]
	gate := filepath.Join(t.TempDir(), "gate")
	input, _ := json.Marshal(map[string]string{"gate": gate})

	var runOut, runErr bytes.Buffer
	run := a.command("run", "lines", "--input", string(input))
	run.Stdout, run.Stderr = &runOut, &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// Machine b finds the run in the shared store.
	var id string
	deadline := time.Now().Add(60 * time.Second)
	for id == "" {
		var list struct {
			Runs []struct {
				ID string `json:"id"`
			} `json:"runs"`
		}
		if err := json.Unmarshal([]byte(b.output("runs", "--json")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list.Runs) > 0 {
			id = list.Runs[0].ID
		} else if time.Now().After(deadline) {
			t.Fatalf("machine b never saw the run; machine a: %s", runErr.String())
		}
	}
	var watchOut, watchErr syncbuf.Buffer
	watch := b.command("watch", id)
	watch.Stdout, watch.Stderr = &watchOut, &watchErr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	// Open the gate once the watcher follows (its first record printed).
	for !strings.Contains(watchOut.String(), "line") && !strings.Contains(watchOut.String(), "started") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("run on machine a: %v\n%s", err, runErr.String())
	}
	if strings.Contains(runErr.String()+watchErr.String(), sharedPassword) {
		t.Fatalf("the password is in a log:\n%s\n%s", runErr.String(), watchErr.String())
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("watch on machine b: %v\n%s\n%s", err, watchErr.String(), watchOut.String())
	}
	next := 1
	for _, line := range strings.Split(watchOut.String(), "\n") {
		if strings.HasSuffix(line, fmt.Sprintf("line-%d", next)) {
			next++
		}
	}
	if next != 501 {
		t.Fatalf("machine b's watch printed lines 1 to %d of 500 in order:\n%s", next-1, watchOut.String())
	}
	var shown struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(b.output("runs", "show", id, "--json")), &shown); err != nil || shown.Status != "succeeded" {
		t.Fatalf("runs show on machine b: %+v, %v", shown, err)
	}
	if _, err := os.Stat(filepath.Join(a.state, "output", id+".jsonl")); err == nil {
		t.Fatal("machine a wrote a journal file: the journal belongs in the database")
	}
	// status on machine a names the database and counts the run there.
	status := a.output("status")
	if !strings.Contains(status, "  store       postgres ") || !strings.Contains(status, "runs 1 ·") || strings.Contains(status, sharedPassword) {
		t.Fatalf("status on machine a:\n%s", status)
	}
}

// TestSessionFromTwoMachines: processes on two machines append to one
// session at once: every message is kept, once. A compaction on one
// machine is read on the other, which writes the memory file out to its
// own state folder (0600).
func TestSessionFromTwoMachines(t *testing.T) {
	t.Parallel()
	ms := newMachines(t, 2, nil)
	a, b := ms[0], ms[1]
	a.output("sessions", "create", "ses_shared")
	const each = 6
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for i, m := range []*machine{a, b} {
		for j := range each {
			wg.Go(func() {
				cmd := m.command("sessions", "append", "ses_shared", "--text", fmt.Sprintf("from-%d-%d", i, j))
				if out, err := cmd.CombinedOutput(); err != nil {
					errs <- fmt.Errorf("append on machine %d: %v\n%s", i, err, out)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var page struct {
		Messages []struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(a.output("sessions", "show", "ses_shared", "--json")), &page); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, msg := range page.Messages {
		for _, p := range msg.Parts {
			seen[p.Text]++
		}
	}
	for i := range 2 {
		for j := range each {
			if n := seen[fmt.Sprintf("from-%d-%d", i, j)]; n != 1 {
				t.Errorf("message from-%d-%d is kept %d times", i, j, n)
			}
		}
	}
	if len(page.Messages) != 2*each {
		t.Fatalf("%d messages, want %d", len(page.Messages), 2*each)
	}

	a.output("sessions", "compact", "ses_shared", "--summary", "the shared summary", "--keep-last", "2")
	b.output("sessions", "show", "ses_shared")
	var wsID string
	for _, line := range strings.Split(b.output("status"), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "id" {
			wsID = f[1]
		}
	}
	path := filepath.Join(b.state, wsID, "memory", "ses_shared.md")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "the shared summary" {
		t.Fatalf("machine b's memory file %s: %q, %v", path, got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("memory file mode: %v, %v", fi, err)
	}
}

// killStrays SIGKILLs every process of this user started with --state
// state and waits until they are gone.
func killStrays(t *testing.T, state string) {
	t.Helper()
	mark := []byte("\x00--state\x00" + state + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var killed []string
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, mark) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, d)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, d := range killed {
		for time.Now().Before(deadline) {
			b, err := os.ReadFile(filepath.Join(d, "stat"))
			// Gone, or a zombie nobody reaps here: either holds nothing.
			if err != nil || bytes.Contains(b, []byte(") Z ")) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(killed) > 0 {
		t.Logf("killed %d host(s) left running on %s", len(killed), state)
	}
}
