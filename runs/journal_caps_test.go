package runs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/store"
)

// capsYAML prints a long line, a short one, a line cut inside a
// multi-byte character, then many numbered lines, and a second step
// prints one line.
const capsYAML = `
steps:
  - id: noisy
    shell: |
      head -c 5000 /dev/zero | tr '\0' a; echo
      echo short
      printf 'é%.0s' $(seq 60); echo
      seq 1 20000
  - id: after
    exec: ["echo", "after"]
`

func TestJournalCutsLinesAndKeepsHeadAndTail(t *testing.T) {
	t.Parallel()
	for _, inMemory := range []bool{false, true} {
		t.Run(fmt.Sprintf("in memory %v", inMemory), func(t *testing.T) {
			t.Parallel()
			const runCap, lineCap = 16 << 10, 101
			te := setup(t, map[string]string{"caps.yaml": capsYAML}, func(o *Options) {
				o.JournalRunCap, o.JournalLineCap, o.InMemory = runCap, lineCap, inMemory
			})
			r := te.launch("caps", "")
			var followed []Record
			done, err := te.e.Watch(te.ctx, r.ID, WatchParams{OnRecord: func(rec Record) error { followed = append(followed, rec); return nil }})
			if err != nil {
				t.Fatal(err)
			}
			if done.Status != store.RunSucceeded {
				t.Fatalf("the run %s: %s", done.Status, done.Error)
			}
			recs := te.records(te.e, r.ID)
			if len(followed) != len(recs) {
				t.Fatalf("Watch handed over %d records, ReadOutput %d", len(followed), len(recs))
			}
			texts := textsOf(recs, "noisy")
			long := texts[0]
			if long.Dropped != 5000-lineCap || long.Text != strings.Repeat("a", lineCap)+cutMarker(5000-lineCap) {
				t.Fatalf("the long line: %d dropped, %q", long.Dropped, long.Text)
			}
			if texts[1].Text != "short" || texts[1].Dropped != 0 {
				t.Fatalf("the short line: %+v", texts[1])
			}
			// 120 bytes of é cut at 101: 50 characters kept, not half of one.
			if e := texts[2]; e.Text != strings.Repeat("é", 50)+cutMarker(20) || e.Dropped != 20 {
				t.Fatalf("the multi-byte line: %d dropped, %q", e.Dropped, e.Text)
			}
			head, trunc, tail := splitAtTruncated(t, recs)
			headNums, tailNums := numbers(t, textsOf(head, "noisy")[3:]), numbers(t, textsOf(tail, "noisy"))
			if trunc.Step != "noisy" || trunc.Lines == 0 || trunc.Dropped == 0 {
				t.Fatalf("truncated record %+v", trunc)
			}
			if headNums[0] != 1 || tailNums[len(tailNums)-1] != 20000 {
				t.Fatalf("head starts at %d, tail ends at %d", headNums[0], tailNums[len(tailNums)-1])
			}
			if got := len(headNums) + int(trunc.Lines) + len(tailNums); got != 20000 || tailNums[0] != headNums[len(headNums)-1]+int(trunc.Lines)+1 {
				t.Fatalf("head %d + dropped %d + tail %d lines (tail from %d)", len(headNums), trunc.Lines, len(tailNums), tailNums[0])
			}
			var droppedBytes int64
			for n := headNums[len(headNums)-1] + 1; n < tailNums[0]; n++ {
				droppedBytes += int64(len(strconv.Itoa(n)))
			}
			if trunc.Dropped != droppedBytes {
				t.Fatalf("truncated record says %d bytes dropped, want %d", trunc.Dropped, droppedBytes)
			}
			// Lifecycle records are always written, after the tail.
			var order []string
			for _, rec := range tail {
				if rec.Type != RecordText {
					order = append(order, rec.Type+":"+rec.Step+":"+rec.Event)
				}
			}
			if want := "step:noisy:finished step:after:started step:after:finished end::"; strings.Join(order, " ") != want {
				t.Fatalf("after the tail: %s, want %s", order, want)
			}
			if a := textsOf(tail, "after"); len(a) != 1 || a[0].Text != "after" {
				t.Fatalf("the second step's output: %+v", a)
			}
			if !inMemory {
				size := fileSize(t, te, r.ID)
				if size > runCap+2<<10 {
					t.Fatalf("the journal holds %d bytes: over its cap of %d plus records", size, runCap)
				}
			}
		})
	}
}

// TestJournalCapOnHugeOutput prints 40 MB (300 MB under CAIRN_SOAK) in
// lines of 1000 bytes, and a 5 MB line, with the default caps.
func TestJournalCapOnHugeOutput(t *testing.T) {
	t.Parallel()
	total := reexec.Soak(40_000_000, 300_000_000)
	te := setup(t, map[string]string{"huge.yaml": fmt.Sprintf(`
steps:
  - id: huge
    shell: |
      head -c 5000000 /dev/zero | tr '\0' y; echo
      yes "$(head -c 999 /dev/zero | tr '\0' x)" | head -c %d
      echo LAST-LINE
`, total)})
	start := time.Now()
	r := te.wait(te.e, te.launch("huge", "").ID)
	t.Logf("%d MB of output in %v", total/1_000_000, time.Since(start))
	if r.Status != store.RunSucceeded {
		t.Fatalf("the run %s: %s", r.Status, r.Error)
	}
	size := fileSize(t, te, r.ID)
	if size > DefaultJournalRunCap+4<<10 {
		t.Fatalf("the journal holds %d bytes, over its cap of %d plus records", size, DefaultJournalRunCap)
	}
	recs := te.records(te.e, r.ID) // the first 10000
	if line := textsOf(recs, "huge")[0]; line.Dropped != 5_000_000-DefaultJournalLineCap || len(line.Text) > DefaultJournalLineCap+100 {
		t.Fatalf("the 5 MB line kept %d bytes, dropped %d", len(line.Text), line.Dropped)
	}
	var all []Record
	if _, err := te.e.Watch(te.ctx, r.ID, WatchParams{OnRecord: func(rec Record) error { all = append(all, rec); return nil }}); err != nil {
		t.Fatal(err)
	}
	_, trunc, tail := splitAtTruncated(t, all)
	texts := textsOf(tail, "huge")
	if last := texts[len(texts)-1]; last.Text != "LAST-LINE" {
		t.Fatalf("the tail ends with %q", last.Text)
	}
	if trunc.Dropped < int64(total)-DefaultJournalRunCap {
		t.Fatalf("truncated record: %d bytes dropped of %d", trunc.Dropped, total)
	}
	t.Logf("journal %d bytes; %d bytes in %d lines dropped; tail %d lines", size, trunc.Dropped, trunc.Lines, len(texts))
}

func TestJournalCapsAreChecked(t *testing.T) {
	t.Parallel()
	te := setup(t, nil)
	for _, o := range []Options{{JournalRunCap: 100}, {JournalLineCap: 10}, {JournalRunCap: -1}} {
		o.Store, o.Workspace = te.st, te.ws
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), "journal caps") {
			t.Fatalf("caps %d/%d: %v", o.JournalRunCap, o.JournalLineCap, err)
		}
	}
}

// textsOf returns the text records of step.
func textsOf(recs []Record, step string) []Record {
	var out []Record
	for _, r := range recs {
		if r.Type == RecordText && r.Step == step {
			out = append(out, r)
		}
	}
	return out
}

// splitAtTruncated splits recs at their one truncated record.
func splitAtTruncated(t *testing.T, recs []Record) (head []Record, trunc Record, tail []Record) {
	t.Helper()
	at := -1
	for i, r := range recs {
		if r.Type == RecordTruncated {
			if at >= 0 {
				t.Fatalf("a second truncated record at %d", i)
			}
			at = i
		}
	}
	if at < 0 {
		t.Fatalf("no truncated record in %d records", len(recs))
	}
	return recs[:at], recs[at], recs[at+1:]
}

// numbers parses text records that are numbers.
func numbers(t *testing.T, recs []Record) []int {
	t.Helper()
	out := make([]int, len(recs))
	for i, r := range recs {
		n, err := strconv.Atoi(r.Text)
		if err != nil {
			t.Fatalf("record %d: %q is not a number", i, r.Text)
		}
		out[i] = n
	}
	if len(out) == 0 {
		t.Fatal("no numbered lines")
	}
	return out
}

func fileSize(t *testing.T, te *testEnv, id string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(te.ws.OutputDir(), id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestJournalCapCountsWhatAResumedRunWrote: the writer of a resumed run
// starts from the journal's size, so the head budget holds across owners
// and the second owner's output goes to the tail at once.
func TestJournalCapCountsWhatAResumedRunWrote(t *testing.T) {
	t.Parallel()
	const runCap = 8 << 10
	te := setup(t, nil, func(o *Options) { o.JournalRunCap, o.InMemory = runCap, true })
	line := strings.Repeat("z", 100)
	for owner := range 2 {
		w := te.e.openJournal("run-resumed")
		w.add(Record{Type: RecordNote, Text: fmt.Sprintf("owner %d", owner)})
		for range 40 { // about 7 KiB of records each
			w.add(Record{Type: RecordText, Step: "s", Text: line})
		}
		w.close()
	}
	size, err := te.e.journals.size("run-resumed")
	if err != nil {
		t.Fatal(err)
	}
	// The cap, and the second owner's tail with its truncated record.
	if size > runCap+runCap/4+1<<10 {
		t.Fatalf("the journal holds %d bytes after two owners, over its cap of %d and a tail", size, runCap)
	}
	rd, err := te.e.journals.reader("run-resumed", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	recs, _, err := readRecords(rd, 1000)
	if err != nil {
		t.Fatal(err)
	}
	head, trunc, tail := splitAtTruncated(t, recs)
	if last := head[len(head)-1]; last.Type != RecordNote || last.Text != "owner 1" {
		t.Fatalf("the second owner wrote past the head budget: %+v before the truncated record", last)
	}
	if n := len(textsOf(head, "s")) + int(trunc.Lines) + len(textsOf(tail, "s")); n != 80 || recs[len(recs)-1].Text != line {
		t.Fatalf("%d lines accounted for, want 80; last record %+v", n, recs[len(recs)-1])
	}
}
