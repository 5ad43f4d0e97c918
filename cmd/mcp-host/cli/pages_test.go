package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/sqlite"
)

// padding is text JSON escapes (6 bytes for '<'), so sizes are counted on
// the printed form.
func padding(n int) string { return strings.Repeat("<é", n) }

// seedPages stores 41 runs, 30 sessions, a session of 101 messages and 30
// automations, each up to a few KiB of JSON, but for one run and one
// message of 16 KB.
func (c *cliWS) seedPages() {
	c.t.Helper()
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	var rs []*store.Run
	for i := range 41 {
		in, _ := json.Marshal(map[string]string{"pad": padding(20 + 4*i)})
		if i == 20 { // 16 KB of JSON: more than the smallest page alone
			in, _ = json.Marshal(map[string]string{"pad": padding(2000)})
		}
		rs = append(rs, &store.Run{ID: fmt.Sprintf("run_%04d", i), Target: "ok", Status: store.RunQueued, Input: in, Literals: json.RawMessage(`{}`), CreatedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	c.seedRuns(rs...)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, c.ws.DBPath(), sqlite.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	defer st.Close()
	for i := range 30 {
		if _, err := st.CreateSession(ctx, &store.Session{ID: fmt.Sprintf("ses_%04d", i), Title: padding(60 + i), CreatedAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			c.t.Fatal(err)
		}
	}
	var msgs []*store.Message
	for i := range 101 {
		parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": padding(20 + i%40)}})
		if i == 50 { // more than the smallest page alone
			parts, _ = json.Marshal([]map[string]string{{"type": "text", "text": padding(2000)}})
		}
		msgs = append(msgs, &store.Message{ID: fmt.Sprintf("m%04d", i), Role: store.RoleUser, Parts: parts, Metadata: json.RawMessage(`{}`)})
	}
	if _, err := st.AppendMessages(ctx, "ses_0000", msgs); err != nil {
		c.t.Fatal(err)
	}
	for i := range 30 {
		a := &store.Automation{ID: fmt.Sprintf("aut_%04d", i), Key: fmt.Sprintf("k%04d", i), Owner: "cli", Target: "ok",
			Input: json.RawMessage(`{}`), Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1h"},
			Enabled: false, Note: padding(150), CreatedAt: t0}
		if err := st.CreateAutomation(ctx, a); err != nil {
			c.t.Fatal(err)
		}
	}
}

// TestJSONPagesStayUnderBudget pages through every listing --json prints
// with the smallest --max-bytes: every page's output is under it, and the
// pages together hold every item once, in order; the run and the message
// too large for a page alone come cut, and the pages go on after them.
func TestJSONPagesStayUnderBudget(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"ok.yaml": cliFiles(t)["ok.yaml"]})
	c.seedPages()
	const budget = 8192
	for _, tc := range []struct {
		name  string
		args  []string
		items string // the JSON field holding the items ("": the output is the list)
		want  int
	}{
		{"runs", []string{"runs", "--limit", "100"}, "runs", 41},
		{"sessions list", []string{"sessions", "list", "--limit", "100"}, "sessions", 30},
		{"sessions show", []string{"sessions", "show", "ses_0000"}, "messages", 101},
		{"automations list", []string{"automations", "list"}, "", 30},
	} {
		var ids []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > tc.want {
				t.Fatalf("%s: paging does not end", tc.name)
			}
			args := append(append([]string{}, tc.args...), "--json", "--max-bytes", strconv.Itoa(budget))
			if cursor != "" {
				args = append(args, "--cursor", cursor)
			}
			code, out, errs := c.run(args...)
			if code != 0 {
				t.Fatalf("%s %v: exit %d: %s", tc.name, args, code, errs)
			}
			if len(out) > budget {
				t.Fatalf("%s: page %d prints %d bytes, over %d", tc.name, pages, len(out), budget)
			}
			var items []struct{ ID string }
			if tc.items == "" {
				if err := json.Unmarshal([]byte(out), &items); err != nil {
					t.Fatal(err)
				}
				cursor = ""
				if m := regexp.MustCompile(`more: mcp-host automations list --cursor '([^']+)'`).FindStringSubmatch(errs); m != nil {
					cursor = m[1]
				}
			} else {
				var pg map[string]json.RawMessage
				if err := json.Unmarshal([]byte(out), &pg); err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(pg[tc.items], &items); err != nil {
					t.Fatal(err)
				}
				cursor = ""
				if raw, ok := pg["next_cursor"]; ok {
					json.Unmarshal(raw, &cursor)
				}
			}
			if len(items) == 0 && cursor != "" {
				t.Fatalf("%s: an empty page with a cursor", tc.name)
			}
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if cursor == "" {
				t.Logf("%s: %d pages", tc.name, pages+1)
				if pages == 0 {
					t.Fatalf("%s: one page of %d; the budget should need several", tc.name, len(items))
				}
				break
			}
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%s: %s twice", tc.name, id)
			}
			seen[id] = true
		}
		if len(ids) != tc.want {
			t.Fatalf("%s: the pages hold %d items, want %d", tc.name, len(ids), tc.want)
		}
		t.Logf("%s: %d items in %d-byte pages", tc.name, len(ids), budget)
	}
	// Orders: runs newest first, messages and automations as stored.
	_, out, _ := c.run("runs", "--json", "--limit", "1")
	if !strings.Contains(out, "run_0040") {
		t.Fatalf("runs are not newest first: %s", out)
	}
	if code, _, errs := c.run("runs", "--json", "--max-bytes", "100"); code != 2 || !strings.Contains(errs, "--max-bytes 100: use 8192 to 1048576") {
		t.Fatalf("a tiny --max-bytes: exit %d: %s", code, errs)
	}
}

// TestRunsShowJSONIsCutToFit: a run with a 200 KB input prints under the
// default budget with its input cut and where the whole is; the
// --max-bytes the pointer names prints it whole.
func TestRunsShowJSONIsCutToFit(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, map[string]string{"ok.yaml": cliFiles(t)["ok.yaml"]})
	data := padding(25_000)
	in, _ := json.Marshal(map[string]string{"data": data})
	c.seedRuns(&store.Run{ID: "run_big", Target: "ok", Status: store.RunQueued, Input: in, Literals: json.RawMessage(`{}`)})
	code, out, errs := c.run("runs", "show", "run_big", "--json")
	if code != 0 || len(out) > 64<<10 {
		t.Fatalf("runs show --json: exit %d, %d bytes: %s", code, len(out), errs)
	}
	var r runs.Run
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Cut) != 1 || r.Cut[0].Field != "input" {
		t.Fatalf("runs show --json: cut %+v, %v", r.Cut, err)
	}
	m := regexp.MustCompile(`--max-bytes (\d+)`).FindStringSubmatch(r.Cut[0].Where)
	if m == nil {
		t.Fatalf("where %q names no --max-bytes", r.Cut[0].Where)
	}
	code, out, errs = c.run("runs", "show", "run_big", "--json", "--max-bytes", m[1])
	var whole runs.Run
	var got struct{ Data string }
	if code != 0 || json.Unmarshal([]byte(out), &whole) != nil || len(whole.Cut) != 0 || json.Unmarshal(whole.Input, &got) != nil || got.Data != data {
		t.Fatalf("runs show --json --max-bytes %s: exit %d, cut %+v: %s", m[1], code, whole.Cut, errs)
	}
	n, _ := strconv.Atoi(m[1])
	if len(out) > n {
		t.Fatalf("whole run prints %d bytes, over --max-bytes %d", len(out), n)
	}
}
