package runs

import (
	"strings"
	"testing"
	"time"
)

func TestReadRecordsKeepsAnIncompleteLine(t *testing.T) {
	t.Parallel()
	in := `{"type":"start","run":"r"}` + "\n" + `{"type":"text","text":"a"}` + "\n" + `{"type":"te`
	recs, n, err := readRecords(strings.NewReader(in), 100)
	if err != nil || len(recs) != 2 || recs[1].Text != "a" || int(n) != strings.LastIndexByte(in, '\n')+1 {
		t.Fatalf("records %+v, consumed %d, %v", recs, n, err)
	}
	recs, n, _ = readRecords(strings.NewReader(in), 1)
	if len(recs) != 1 || int(n) != strings.IndexByte(in, '\n')+1 {
		t.Fatalf("limit 1: %+v %d", recs, n)
	}
	recs, _, _ = readRecords(strings.NewReader("garbage\n"), 10)
	if len(recs) != 1 || recs[0].Type != RecordNote || !strings.Contains(recs[0].Text, "unreadable") {
		t.Fatalf("garbage line: %+v", recs)
	}
	if _, err := parseCursor("-1"); err == nil {
		t.Fatal("a negative cursor was accepted")
	}
}

// Both journal backends remove a deleted run's journal and list stale
// ones; retention uses them rather than knowing the file layout.
func TestJournalsRemoveAndListStale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, j := range map[string]journals{"file": &fileJournals{dir: dir}, "memory": newMemJournals()} {
		t.Run(name, func(t *testing.T) {
			w, err := j.open("run_a")
			if err != nil {
				t.Fatal(err)
			}
			if err := w.write([]byte("{}\n")); err != nil {
				t.Fatal(err)
			}
			w.close()
			stale, err := j.stale(time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if name == "file" && (len(stale) != 1 || stale[0] != "run_a") {
				t.Fatalf("stale = %v, want [run_a]", stale)
			}
			if fresh, _ := j.stale(time.Now().Add(-time.Hour)); len(fresh) != 0 {
				t.Fatalf("journals written now listed as stale an hour ago: %v", fresh)
			}
			if n, err := j.remove("run_a"); err != nil || n != 3 {
				t.Fatalf("remove = %d, %v; want 3 bytes", n, err)
			}
			if n, err := j.size("run_a"); err != nil || n != 0 {
				t.Fatalf("size after remove = %d, %v", n, err)
			}
			if n, err := j.remove("run_a"); err != nil || n != 0 {
				t.Fatalf("second remove = %d, %v; want 0, nil", n, err)
			}
		})
	}
	if _, err := JournalDir(dir).RemoveJournal("../escape"); err == nil {
		t.Fatal("JournalDir removed a journal for a hostile id")
	}
}
