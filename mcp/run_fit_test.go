package mcp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/runs"
	"github.com/cairnhq/cairn/store/memory"
)

// TestRunRepliesStayUnderBudget launches a run with a large input (under
// the input cap, full of characters JSON escapes): get_run, launch_run
// and the cairn://runs/{id} resource stay under their budgets, cut the
// input with a marker and say where the whole is; get_run with the
// max_bytes the pointer names returns it whole. An input over the cap is
// refused with an error naming it.
func TestRunRepliesStayUnderBudget(t *testing.T) {
	t.Parallel()
	ws := adapterWorkspace(t)
	wf := "name: takes\ninput:\n  type: object\nsteps:\n  - id: a\n    exec: [\"true\"]\n"
	if err := os.WriteFile(filepath.Join(ws.WorkflowsDir(), "takes.yaml"), []byte(wf), 0o600); err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	eng, err := runs.New(runs.Options{Store: st, Workspace: ws, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Stop(); st.Close() })
	f := setup(t, fixtureOpts{runs: eng, runStore: st})

	data := strings.Repeat("<\"é", 20_000) // 80 KB of text, 200 KB of JSON once escaped
	input := map[string]any{"data": data}
	r, m, err := f.client.CallTool(f.ctx(), "launch_run", map[string]any{"target": "takes", "input": input, "wait_seconds": 30}, nil)
	if err != nil || r.IsError {
		t.Fatalf("launch_run: %v %s", err, r.Text())
	}
	if len(m.Raw) > DefaultReplyBytes {
		t.Fatalf("launch_run reply is %d bytes, over %d", len(m.Raw), DefaultReplyBytes)
	}
	var launched runs.Run
	decode(t, r, &launched)

	r, m, err = f.client.CallTool(f.ctx(), "get_run", map[string]any{"run_id": launched.ID}, nil)
	if err != nil || r.IsError {
		t.Fatalf("get_run: %v %s", err, r.Text())
	}
	if len(m.Raw) > DefaultReplyBytes {
		t.Fatalf("get_run reply is %d bytes, over %d", len(m.Raw), DefaultReplyBytes)
	}
	var got runs.Run
	decode(t, r, &got)
	if len(got.Cut) != 1 || got.Cut[0].Field != "input" || got.Cut[0].Kept == 0 {
		t.Fatalf("get_run cut %+v, want the input cut", got.Cut)
	}
	t.Logf("get_run of a run with %d bytes of input: %d bytes, %d of the input kept", got.Cut[0].Bytes, len(m.Raw), got.Cut[0].Kept)
	var head string
	if err := json.Unmarshal(got.Input, &head); err != nil || !strings.HasPrefix(head, `{"data":"`) || !strings.Contains(head, "… [cut: ") {
		t.Fatalf("cut input %.80q… (%v), want the head of its JSON and a marker", head, err)
	}
	mb := regexp.MustCompile(`max_bytes (\d+)`).FindStringSubmatch(got.Cut[0].Where)
	if mb == nil {
		t.Fatalf("where %q names no max_bytes", got.Cut[0].Where)
	}
	n, _ := strconv.Atoi(mb[1])
	r, m, err = f.client.CallTool(f.ctx(), "get_run", map[string]any{"run_id": launched.ID, "max_bytes": n}, nil)
	if err != nil || r.IsError {
		t.Fatalf("get_run max_bytes %d: %v %s", n, err, r.Text())
	}
	var whole runs.Run
	decode(t, r, &whole)
	var in struct{ Data string }
	if len(m.Raw) > n || len(whole.Cut) != 0 || json.Unmarshal(whole.Input, &in) != nil || in.Data != data {
		t.Fatalf("get_run max_bytes %d: %d bytes, cut %+v, input whole: %v", n, len(m.Raw), whole.Cut, in.Data == data)
	}

	res, err := f.client.Call(f.ctx(), "resources/read", map[string]any{"uri": "cairn://runs/" + launched.ID})
	if err != nil || res.Error != nil || len(res.Raw) > DefaultReplyBytes || !strings.Contains(string(res.Raw), "cut: ") {
		t.Fatalf("resources/read: %v, %d bytes (budget %d)", err, len(res.Raw), DefaultReplyBytes)
	}

	over := strings.Repeat("x", runs.MaxInputBytes)
	msg := f.fails("launch_run", map[string]any{"target": "takes", "input": map[string]any{"data": over}})
	if !strings.Contains(msg, "over the cap of 262144") || !strings.Contains(msg, "file") {
		t.Fatalf("launch_run of a %d-byte input: %q", len(over), msg)
	}
}
