package mcp

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// bigLineBytes is the length of the long line a test run prints: 50 MB,
// or 4 MB under the race detector unless CAIRN_SOAK is set (the pages'
// JSON costs ten times more there).
func bigLineBytes() int {
	if raceEnabled && os.Getenv("CAIRN_SOAK") == "" {
		return 4_000_000
	}
	return 50_000_000
}

// hugeOutputBytes is what the huge run prints in lines of 1000 bytes:
// more than the journal's cap (journalRunCap), so that its journal is the
// capped head, a truncated record and the tail, as the journal of issue
// 15's step printing 300 MB (which it prints under CAIRN_SOAK).
func hugeOutputBytes() int { return reexec.Soak(3_000_000, 300_000_000) }

// journalRunCap is the engine's journal cap in these tests: the default
// 16 MiB under CAIRN_SOAK, 2 MiB in a local make test (paging through 16
// MiB of JSON under the race detector takes longer than its budget).
func journalRunCap() int64 { return int64(reexec.Soak(2<<20, runs.DefaultJournalRunCap)) }

// outputScripts print one long line, more than the journal's cap, and
// lines full of characters that JSON escapes (6 bytes for '<'), so pieces
// are cut on escaped lengths.
func outputScripts() map[string]string {
	return map[string]string{
		"huge": fmt.Sprintf("yes \"$(head -c 999 /dev/zero | tr '\\0' x)\" | head -c %d\necho LAST-LINE\n", hugeOutputBytes()),
		"big":  fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x\n", bigLineBytes()),
		"escaped": `head -c 30000 /dev/zero | tr '\0' '<'
echo
printf '"\303\251\t\\\n'
head -c 10000 /dev/zero | tr '\0' '&'
`,
	}
}

// TestReadRunOutputPagesStayUnderBudget reads, page by page over MCP, the
// output of real runs (one prints a 50 MB line): every reply is under its
// budget, and the pages together give back every journal record, byte for
// byte, in order.
func TestReadRunOutputPagesStayUnderBudget(t *testing.T) {
	t.Parallel()
	ws := adapterWorkspace(t)
	for name, script := range outputScripts() {
		path := filepath.Join(t.TempDir(), name+".sh")
		if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		wf := fmt.Sprintf("name: %s\nsteps:\n  - id: print\n    exec: [\"sh\", %q]\n", name, path)
		if err := os.WriteFile(filepath.Join(ws.WorkflowsDir(), name+".yaml"), []byte(wf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st := memory.New()
	eng, err := runs.New(runs.Options{Store: st, Workspace: ws, JournalRunCap: journalRunCap()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Stop(); st.Close() })
	f := setup(t, fixtureOpts{runs: eng, runStore: st})

	launched := map[string]runs.Run{}
	for _, tc := range []struct {
		target string
		budget int // max_bytes; 0: none given
	}{
		{"big", 0},
		{"huge", 0},
		{"escaped", minReplyBytes},
		{"escaped", MaxReplyBytes},
		{"escaped", 0},
	} {
		run, ok := launched[tc.target]
		if !ok {
			start := time.Now()
			f.ok("launch_run", map[string]any{"target": tc.target, "wait_seconds": 60}, &run)
			if run.Status != "succeeded" {
				t.Fatalf("run %s: %s", run.Status, run.Error)
			}
			launched[tc.target] = run
			t.Logf("%s: ran in %v", tc.target, time.Since(start))
		}
		if m, err := f.client.Call(f.ctx(), "resources/read", map[string]any{"uri": runOutputURI(run.ID)}); err != nil || m.Error != nil || len(m.Raw) > DefaultReplyBytes {
			t.Fatalf("resources/read of %s's output: %v %v, %d bytes", tc.target, err, m.Error, len(m.Raw))
		}
		start := time.Now()
		want := journalRecords(t, ws.Root, run.ID)
		limit := cmp.Or(tc.budget, DefaultReplyBytes)
		got, pages := readAllOutput(t, f, run.ID, tc.budget, limit)
		if len(got) != len(want) {
			t.Fatalf("%s, max_bytes %d: %d records in %d pages, the journal has %d", tc.target, tc.budget, len(got), pages, len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%s, max_bytes %d: record %d differs:\n got %.200v\nwant %.200v", tc.target, tc.budget, i, got[i], want[i])
			}
		}
		t.Logf("%s, max_bytes %d: %d records in %d pages, read in %v", tc.target, tc.budget, len(got), pages, time.Since(start))
		if tc.target == "huge" {
			checkCappedJournal(t, ws.Root, run.ID, got)
		}
	}
}

// checkCappedJournal: the huge run's journal file is under its cap plus
// one record, and the records read hold its truncated record and end
// with the last line printed.
func checkCappedJournal(t *testing.T, root, runID string, got []runs.Record) {
	t.Helper()
	var size int64
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == runID+".jsonl" {
			if fi, err := d.Info(); err == nil {
				size = fi.Size()
			}
		}
		return nil
	})
	truncated, last := false, ""
	for _, r := range got {
		switch r.Type {
		case runs.RecordTruncated:
			truncated = true
		case runs.RecordText:
			last = r.Text
		}
	}
	if size == 0 || size > journalRunCap()+4<<10 || !truncated || last != "LAST-LINE" {
		t.Fatalf("huge run: journal of %d bytes (cap %d), truncated record %v, last line %q", size, journalRunCap(), truncated, last)
	}
}

// readAllOutput reads a run's output to the end with read_run_output,
// checking each reply's size, and joins the pieces of split records.
func readAllOutput(t *testing.T, f *fixture, runID string, budget, limit int) ([]runs.Record, int) {
	t.Helper()
	var (
		got    []runs.Record
		joined []byte
		first  outputRecord
	)
	cursor, pages := "", 0
	for ; ; pages++ {
		args := map[string]any{"run_id": runID, "cursor": cursor}
		if budget > 0 {
			args["max_bytes"] = budget
		}
		r, m, err := f.client.CallTool(f.ctx(), "read_run_output", args, nil)
		if err != nil || r.IsError {
			t.Fatalf("read_run_output %v: %v %s", args, err, r.Text())
		}
		if len(m.Raw) > limit {
			t.Fatalf("page %d (cursor %q) is %d bytes, over the budget %d", pages, cursor, len(m.Raw), limit)
		}
		var page outputPage
		decode(t, r, &page)
		for _, rec := range page.Records {
			if rec.Piece == nil {
				got = append(got, rec.Record)
				continue
			}
			if rec.Piece.Offset == 0 {
				first, joined = rec, joined[:0]
			}
			if rec.Piece.Offset != len(joined) {
				t.Fatalf("piece at %d, want %d", rec.Piece.Offset, len(joined))
			}
			joined = append(joined, rec.Text...)
			if len(joined) < rec.Piece.Size {
				continue
			}
			whole := first.Record
			whole.Text = string(joined)
			if rec.Piece.JSON {
				whole = runs.Record{}
				if err := json.Unmarshal(joined, &whole); err != nil {
					t.Fatal(err)
				}
			}
			got = append(got, whole)
		}
		if page.Done {
			return got, pages + 1
		}
		if page.NextCursor == cursor {
			t.Fatalf("page %d: the cursor %q did not move", pages, cursor)
		}
		cursor = page.NextCursor
	}
}

// journalRecords decodes the run's journal file.
func journalRecords(t *testing.T, root, runID string) []runs.Record {
	t.Helper()
	var path string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == runID+".jsonl" {
			path = p
		}
		return nil
	})
	fh, err := os.Open(path)
	if err != nil {
		t.Fatalf("open journal: %v", err)
	}
	defer fh.Close()
	var out []runs.Record
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r runs.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestListAutomationsPagesStayUnderBudget lists 10,000 automations page
// by page (1,000 under the race detector unless CAIRN_SOAK is set: 54 s
// at 10,000 under it, as the memory store sorts every automation for each
// page's keyset query): every reply is under its budget and the pages
// hold each automation once, in order.
func TestListAutomationsPagesStayUnderBudget(t *testing.T) {
	t.Parallel()
	f := setup(t, fixtureOpts{})
	n := 10000
	if raceEnabled && os.Getenv("CAIRN_SOAK") == "" {
		n = 1000
	}
	in := json.RawMessage(`{"note":"` + strings.Repeat("<x>", 100) + `"}`)
	for i := range n {
		a := &store.Automation{
			ID: fmt.Sprintf("a-%05d", i), Key: fmt.Sprintf("key-%05d", i), Owner: fmt.Sprintf("owner-%d", i%7),
			Target: "steps", Input: in, Enabled: true, Overlap: "skip", Missed: "skip",
			Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1h"},
		}
		if err := f.st.CreateAutomation(f.ctx(), a); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		budget, limit int // 0: none given
	}{{0, 0}, {0, maxAutomationsPage}, {MaxReplyBytes, maxAutomationsPage}} {
		seen, pages, cursor, last := 0, 0, "", ""
		for ; ; pages++ {
			args := map[string]any{"all": true, "cursor": cursor}
			if tc.budget > 0 {
				args["max_bytes"] = tc.budget
			}
			if tc.limit > 0 {
				args["limit"] = tc.limit
			}
			r, m, err := f.client.CallTool(f.ctx(), "list_automations", args, nil)
			if err != nil || r.IsError {
				t.Fatalf("list_automations %v: %v %s", args, err, r.Text())
			}
			if limit := cmp.Or(tc.budget, DefaultReplyBytes); len(m.Raw) > limit {
				t.Fatalf("page %d is %d bytes, over the budget %d", pages, len(m.Raw), limit)
			}
			var page automationsOut
			decode(t, r, &page)
			for _, a := range page.Automations {
				if k := automationKey(a); k <= last {
					t.Fatalf("page %d: %q after %q", pages, k, last)
				} else {
					last = k
				}
				seen++
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		if seen != n {
			t.Fatalf("max_bytes %d, limit %d: %d automations in %d pages, want %d", tc.budget, tc.limit, seen, pages+1, n)
		}
		t.Logf("max_bytes %d, limit %d: %d automations in %d pages", tc.budget, tc.limit, seen, pages+1)
	}
}

// TestSplitRecordByJSON splits a record whose result, not its text, is too
// large: the pieces carry its JSON encoding, each within the room.
func TestSplitRecordByJSON(t *testing.T) {
	t.Parallel()
	res, _ := json.Marshal(map[string]string{"out": strings.Repeat(`"é<`, 30000)})
	rec := runs.Record{Type: runs.RecordEnd, Status: "succeeded", Text: "done", Result: res}
	const room = minReplyBytes - replyReserve
	var joined []byte
	for from := 0; ; {
		piece, next, err := splitRecord(rec, from, room)
		if err != nil {
			t.Fatal(err)
		}
		if n := page.JSONLen(piece); n > room {
			t.Fatalf("piece at %d is %d bytes, over %d", from, n, room)
		}
		if !piece.Piece.JSON || piece.Piece.Offset != from {
			t.Fatalf("piece at %d: %+v", from, piece.Piece)
		}
		joined = append(joined, piece.Text...)
		if next == 0 {
			break
		}
		from = next
	}
	var got runs.Record
	if err := json.Unmarshal(joined, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rec) {
		t.Fatalf("joined record differs: %.200v", got)
	}
}
