package sqlite

import (
	"context"
	"strings"
	"testing"
)

// The queries peers poll and owners write with find their rows through an
// index: no full scan of runs or run_ledger, and no sort but of the rows
// found (RunnableRuns orders the runnable runs by status, Ledger a run's
// entries by seq).
func TestRunQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	defer s.Close()
	queries := map[string]struct {
		q        string
		mustSort bool // sorting the rows it found is fine
	}{
		"get run":         {q: qGetRun},
		"get run journal": {q: qGetRunJournal},
		"owned run":       {q: qGetOwnedRun},
		"update run":      {q: qUpdateRun},
		"insert run":      {q: qInsertRun},
		"run claims":      {q: qRunClaims},
		"changed runs":    {q: qChangedRuns},
		"last run change": {q: qLastRunChange},
		"runnable runs":   {q: qRunnableRuns, mustSort: true},
		"count pending":   {q: qCountPending},
		"get entry":       {q: qGetEntry},
		"record outcome":  {q: qRecordOutcome},
		"ledger":          {q: qLedger, mustSort: true},
	}
	for name, c := range queries {
		args := make([]any, strings.Count(c.q, "?"))
		for i := range args {
			args[i] = "[]"
		}
		rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+c.q, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, step := range plan {
			table, _, _ := strings.Cut(strings.TrimPrefix(step, "SCAN "), " ")
			if strings.HasPrefix(step, "SCAN ") && (table == "runs" || table == "run_ledger") {
				t.Errorf("%s scans a table: %v", name, plan)
			}
			if strings.Contains(step, "TEMP B-TREE") && !c.mustSort {
				t.Errorf("%s sorts: %v", name, plan)
			}
		}
	}
}
