package store

import (
	"slices"
	"testing"
	"time"
)

func TestDeletedAddMerge(t *testing.T) {
	var d Deleted
	for id, st := range map[string]RunStatus{"a": RunSucceeded, "b": RunRunning, "c": "", "d": RunCancelled} {
		d.Add(id, st)
	}
	slices.Sort(d.Deleted)
	if !slices.Equal(d.Deleted, []string{"a", "d"}) || !slices.Equal(d.Active, []string{"b"}) || !slices.Equal(d.Missing, []string{"c"}) {
		t.Fatalf("Add sorted into %+v", d)
	}
	var all Deleted
	all.Merge(d)
	all.Merge(Deleted{Deleted: []string{"e"}, Missing: []string{"f"}})
	if len(all.Deleted) != 3 || len(all.Active) != 1 || len(all.Missing) != 2 {
		t.Fatalf("Merge gave %+v", all)
	}
}

func TestRunPage(t *testing.T) {
	at := time.UnixMilli(1700000000000).UTC()
	runs := []*Run{{ID: "r3", CreatedAt: at}, {ID: "r2", CreatedAt: at}, {ID: "r1", CreatedAt: at}}
	if page, next := RunPage(runs, 3); len(page) != 3 || next != "" {
		t.Fatalf("a last page: %d runs, cursor %q", len(page), next)
	}
	page, next := RunPage(runs, 2)
	if len(page) != 2 || next != RunCursor(runs[1]) {
		t.Fatalf("a full page: %d runs, cursor %q", len(page), next)
	}
	if ms, id, err := ParseRunCursor(next); err != nil || ms != at.UnixMilli() || id != "r2" {
		t.Fatalf("the cursor reads back as %d, %q, %v", ms, id, err)
	}
}

func TestDistinctFences(t *testing.T) {
	a, b := &LeaseFence{Name: "scheduler", Holder: "h", Epoch: 1}, &LeaseFence{Name: "scheduler", Holder: "h", Epoch: 2}
	got := DistinctFences(a, nil, a, b, &LeaseFence{Name: "scheduler", Holder: "h", Epoch: 1})
	if !slices.Equal(got, []LeaseFence{*a, *b}) {
		t.Fatalf("DistinctFences = %+v", got)
	}
	if DistinctFences() != nil || DistinctFences(nil) != nil {
		t.Fatal("no fences gave some")
	}
}

func TestDistinct(t *testing.T) {
	if got := Distinct([]string{"b", "a", "b", "c", "a"}); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("Distinct = %v", got)
	}
}
