package sqlite

import "testing"

// TestSessionQueriesUseIndexes: no query on the append and read paths
// scans a table, so their cost does not grow with the session.
func TestSessionQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	checkPlans(t, nil, map[string]planCase{
		"append: reserve seqs": {q: "UPDATE sessions SET last_seq = last_seq + 1, message_count = message_count + 1, revision = revision + 1, updated_at = 1 WHERE id = 'x' RETURNING " + sessionColumns},
		"get session":          {q: "SELECT " + sessionColumns + " FROM sessions WHERE id = 'x'"},
		"read messages":        {q: "SELECT " + messageColumns + " FROM session_messages WHERE session_id = 'x' AND seq > 5 ORDER BY seq LIMIT 100"},
		"list sessions":        {q: "SELECT " + sessionColumns + " FROM sessions WHERE (created_at, id) < (5, 'x') ORDER BY created_at DESC, id DESC LIMIT 10"},
		"compaction cut":       {q: "SELECT seq FROM session_messages WHERE session_id = 'x' ORDER BY seq DESC LIMIT 1 OFFSET 4"},
		"compaction delete":    {q: "DELETE FROM session_messages WHERE session_id = 'x' AND seq <= 10"},
		"archives of session":  {q: "SELECT " + archiveColumns + " FROM session_archives WHERE session_id = 'x' ORDER BY n DESC"},
	})
}
