package sqlite

import (
	"context"
	"strings"
	"testing"
)

// planCase is a query whose plan is checked; mustSort allows sorting the
// rows it found (a TEMP B-TREE).
type planCase struct {
	q        string
	mustSort bool
}

// checkPlans explains each query on a new store (every ? bound to "[]")
// and fails when a step scans one of tables, or sorts unless allowed.
func checkPlans(t *testing.T, tables []string, queries map[string]planCase) {
	t.Helper()
	s := newTestStore(t)
	defer s.Close()
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
			if scansTable(step, tables) {
				t.Errorf("%s scans a table: %v", name, plan)
			}
			if strings.Contains(step, "TEMP B-TREE") && !c.mustSort {
				t.Errorf("%s sorts: %v", name, plan)
			}
		}
	}
}

// scansTable reports whether a plan step scans one of tables in full (nil
// tables: any table, unless through an index).
func scansTable(step string, tables []string) bool {
	if !strings.HasPrefix(step, "SCAN ") {
		return false
	}
	if tables == nil {
		return !strings.Contains(step, "USING INDEX") && !strings.Contains(step, "USING COVERING INDEX")
	}
	table, _, _ := strings.Cut(strings.TrimPrefix(step, "SCAN "), " ")
	for _, name := range tables {
		if table == name {
			return true
		}
	}
	return false
}
