package sqlite

import "testing"

// The queries peers poll and owners write with find their rows through an
// index: no full scan of runs or run_ledger, and no sort but of the rows
// found (RunnableRuns orders the runnable runs by status, Ledger a run's
// entries by seq).
func TestRunQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	checkPlans(t, []string{"runs", "run_ledger"}, map[string]planCase{
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
		"next wake":       {q: qNextWake},
		"get entry":       {q: qGetEntry},
		"record outcome":  {q: qRecordOutcome},
		"ledger":          {q: qLedger, mustSort: true},
	})
}
