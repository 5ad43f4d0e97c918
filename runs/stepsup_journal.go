package runs

import (
	"context"
	"time"

	"github.com/cairnhq/cairn/store/postgres"
)

// JournalDatabase says how a step supervisor, a separate process, reaches
// the journals of a store shared by several machines (PostgreSQL): it
// opens its own small connection pool to the workspace's schema. It
// travels in the step spec, on the supervisor's standard input (never in
// argv or its environment), since the URL may hold a password.
type JournalDatabase struct {
	URL         string `json:"url"`
	WorkspaceID string `json:"workspace_id"`
}

// supervisorJournalTimeout bounds a supervisor's connecting to the
// database.
const supervisorJournalTimeout = 30 * time.Second

// supervisorJournals is where a supervisor writes its step's journal
// records: the run's journal in the database when the spec names one,
// else the journal file in the output folder. A database it cannot reach
// leaves the records in this machine's journal file, where they are not
// lost, rather than failing the step.
func supervisorJournals(s stepSpec) journals {
	files := &fileJournals{dir: s.OutputDir}
	if s.Journals == nil {
		return files
	}
	ctx, cancel := context.WithTimeout(context.Background(), supervisorJournalTimeout)
	defer cancel()
	j, err := postgres.OpenJournals(ctx, postgres.Config{URL: s.Journals.URL, WorkspaceID: s.Journals.WorkspaceID})
	if err != nil {
		return files
	}
	return newStoreJournals(j, s.OutputDir, nil)
}
