package runs

import (
	"strings"
	"testing"
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
