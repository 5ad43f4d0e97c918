package sqlite

import (
	"context"
	"strings"
	"testing"
)

// TestSessionQueriesUseIndexes: no query on the append and read paths
// scans a table, so their cost does not grow with the session.
func TestSessionQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	defer s.Close()
	queries := map[string]string{
		"append: reserve seqs": "UPDATE sessions SET last_seq = last_seq + 1, message_count = message_count + 1, revision = revision + 1, updated_at = 1 WHERE id = 'x' RETURNING " + sessionColumns,
		"get session":          "SELECT " + sessionColumns + " FROM sessions WHERE id = 'x'",
		"read messages":        "SELECT " + messageColumns + " FROM session_messages WHERE session_id = 'x' AND seq > 5 ORDER BY seq LIMIT 100",
		"list sessions":        "SELECT " + sessionColumns + " FROM sessions WHERE (created_at, id) < (5, 'x') ORDER BY created_at DESC, id DESC LIMIT 10",
		"compaction cut":       "SELECT seq FROM session_messages WHERE session_id = 'x' ORDER BY seq DESC LIMIT 1 OFFSET 4",
		"compaction delete":    "DELETE FROM session_messages WHERE session_id = 'x' AND seq <= 10",
		"archives of session":  "SELECT " + archiveColumns + " FROM session_archives WHERE session_id = 'x' ORDER BY n DESC",
	}
	for name, q := range queries {
		rows, err := s.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q)
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
			if strings.HasPrefix(step, "SCAN ") && !strings.Contains(step, "USING INDEX") && !strings.Contains(step, "USING COVERING INDEX") {
				t.Errorf("%s scans a table: %v", name, plan)
			}
			if strings.Contains(step, "TEMP B-TREE") {
				t.Errorf("%s sorts: %v", name, plan)
			}
		}
	}
}
