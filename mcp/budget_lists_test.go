package mcp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/internal/reexec"
	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

// TestListsAndSessionsStayUnderBudget pages list_sessions over 600
// sessions, get_session over a session of 100 messages of about 3 KB of
// JSON each and over one holding a 1 MB message, and list_runs over 200
// runs with inputs of 2 KB, all full of characters JSON escapes, with the
// default budget, the smallest and the largest: every reply (text and
// structured content together) is under its budget, and the pages hold
// every item once; a message or a run that alone does not fit comes cut
// with a marker, and the next page goes on after it.
func TestListsAndSessionsStayUnderBudget(t *testing.T) {
	t.Parallel()
	runStore := memory.New()
	eng, err := runs.New(runs.Options{Store: runStore, Workspace: adapterWorkspace(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Stop(); runStore.Close() })
	f := setup(t, fixtureOpts{runs: eng, runStore: runStore})
	ctx := f.ctx()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	// Fewer sessions and a smaller huge message in a local make test (the
	// race detector makes their JSON ten times slower); both still need
	// several pages, and the huge message more than the largest budget.
	n, msgs, nRuns, hugeLen := reexec.Soak(250, 600), 100, 200, reexec.Soak(250_000, 1_000_000)
	title := strings.Repeat("<", 100)
	for i := range n {
		if _, err := f.st.CreateSession(ctx, &store.Session{ID: fmt.Sprintf("ses_%04d", i), Title: title, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	text, _ := json.Marshal(strings.Repeat("<&>", 170))
	var batch []*store.Message
	for i := range msgs {
		batch = append(batch, &store.Message{ID: fmt.Sprintf("msg_%04d", i), Role: "user", CreatedAt: now,
			Parts: json.RawMessage(`[{"type":"text","text":` + string(text) + `}]`), Metadata: json.RawMessage(`{}`)})
	}
	if _, err := f.st.AppendMessages(ctx, "ses_0000", batch); err != nil {
		t.Fatal(err)
	}
	// ses_0001: a message of 1 MB (250 KB locally) that escapes to 6 MB
	// (1.5 MB) of JSON between two small ones.
	huge, _ := json.Marshal(strings.Repeat("<", hugeLen))
	small := json.RawMessage(`[{"type":"text","text":"small"}]`)
	if _, err := f.st.AppendMessages(ctx, "ses_0001", []*store.Message{
		{ID: "msg_a", Role: "user", CreatedAt: now, Parts: small, Metadata: json.RawMessage(`{}`)},
		{ID: "msg_huge", Role: "user", CreatedAt: now, Parts: json.RawMessage(`[{"type":"text","text":` + string(huge) + `}]`), Metadata: json.RawMessage(`{"k":"v"}`)},
		{ID: "msg_b", Role: "user", CreatedAt: now, Parts: small, Metadata: json.RawMessage(`{}`)},
	}); err != nil {
		t.Fatal(err)
	}
	input := json.RawMessage(`{"pad":"` + strings.Repeat("<", 2000) + `"}`)
	for i := range nRuns {
		at := now.Add(time.Duration(i) * time.Second)
		if err := runStore.CreateRun(ctx, &store.Run{ID: fmt.Sprintf("run_%04d", i), Target: "steps", Status: store.RunSucceeded,
			Input: input, Literals: json.RawMessage(`{}`), CreatedAt: at, FinishedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		items string
		want  int
	}{
		{"list_sessions", map[string]any{"limit": 200}, "sessions", n},
		{"get_session", map[string]any{"session_id": "ses_0000", "limit": 200}, "messages", msgs},
		{"get_session", map[string]any{"session_id": "ses_0001"}, "messages", 3},
		{"list_runs", map[string]any{"limit": 200}, "runs", nRuns},
	} {
		for _, budget := range []int{0, minReplyBytes, MaxReplyBytes} {
			limit := cmp.Or(budget, DefaultReplyBytes)
			seen, pages, cursor := map[string]bool{}, 0, ""
			for ; ; pages++ {
				args := map[string]any{"cursor": cursor}
				for k, v := range tc.args {
					args[k] = v
				}
				if budget > 0 {
					args["max_bytes"] = budget
				}
				r, m, err := f.client.CallTool(f.ctx(), tc.tool, args, nil)
				if err != nil || r.IsError {
					t.Fatalf("%s %v: %v %s", tc.tool, args, err, r.Text())
				}
				if len(m.Raw) > limit {
					t.Fatalf("%s, max_bytes %d: page %d is %d bytes, over the budget %d", tc.tool, budget, pages, len(m.Raw), limit)
				}
				var page struct {
					Items      []map[string]any `json:"-"`
					NextCursor string           `json:"next_cursor"`
				}
				var raw map[string]json.RawMessage
				decode(t, r, &raw)
				if err := json.Unmarshal(raw[tc.items], &page.Items); err != nil {
					t.Fatal(err)
				}
				_ = json.Unmarshal(raw["next_cursor"], &page.NextCursor)
				if len(page.Items) == 0 && page.NextCursor != "" {
					t.Fatalf("%s, max_bytes %d: page %d is empty with a next cursor", tc.tool, budget, pages)
				}
				for _, it := range page.Items {
					id, _ := it["id"].(string)
					parts, _ := json.Marshal(it["parts"])
					cut := strings.Contains(string(parts), "[message cut: it takes ") && strings.Contains(string(parts), "sessions export ses_")
					// A message is cut only when it alone does not fit: the
					// 1 MB one always, the 3 KB ones at the smallest budget.
					if tc.items == "messages" && cut != (id == "msg_huge" || budget == minReplyBytes && strings.HasPrefix(id, "msg_0")) {
						t.Fatalf("%s, max_bytes %d: message %s cut %v: %s", tc.tool, budget, id, cut, parts)
					}
					// A run (12 KB of JSON) is cut only at the smallest
					// budget, as get_run cuts it.
					if cuts, _ := it["cut"].([]any); tc.items == "runs" && (len(cuts) > 0) != (budget == minReplyBytes) {
						t.Fatalf("%s, max_bytes %d: run %s cut %v", tc.tool, budget, id, it["cut"])
					}
					if seen[id] {
						t.Fatalf("%s, max_bytes %d: %s twice", tc.tool, budget, id)
					}
					seen[id] = true
				}
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
			}
			if len(seen) != tc.want {
				t.Fatalf("%s, max_bytes %d: %d items in %d pages, want %d", tc.tool, budget, len(seen), pages+1, tc.want)
			}
			t.Logf("%s, max_bytes %d: %d items in %d pages", tc.tool, budget, len(seen), pages+1)
		}
	}
}
