package runs

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/secrets"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// mapSecrets is a SecretSource over a map.
type mapSecrets map[string]string

func (m mapSecrets) Get(names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		v, ok := m[n]
		if !ok {
			return nil, &secrets.NotSetError{Name: n}
		}
		out[n] = v
	}
	return out, nil
}

const leakyFlow = `
steps:
  - id: leak
    exec: [sh, -c, 'echo "out $TOK"; echo "err \"$TOK\"" >&2; test "$TOK" = "$1"', sh, "${{ secrets.TOK }}"]
    env: {TOK: "${{ secrets.TOK }}"}
  - id: fail
    exec: ["./${{ secrets.TOK }}"]
result: ${{ steps.leak.stdout }}
`

// TestSecretsRedactedFromEverythingRecorded: a step gets a secret's value
// in its env and arguments; its output, the ledger, the journal, the
// run's result and error hold "***" instead.
func TestSecretsRedactedFromEverythingRecorded(t *testing.T) {
	t.Parallel()
	const val = `s3cr3t"va\lue`
	te := setup(t, map[string]string{"leaky.yaml": leakyFlow}, func(o *Options) { o.Secrets = mapSecrets{"TOK": val} })
	r := te.wait(te.e, te.launch("leaky", "").ID)
	if r.Status != store.RunFailed || !strings.Contains(r.Error, "program ./***: stat ") {
		t.Fatalf("run %s: %s", r.Status, r.Error)
	}
	// The first step saw the value (its test passed) and printed it.
	if r.Steps[0].Status != StepSucceeded {
		t.Fatalf("the step that uses the secret: %+v", r.Steps[0])
	}
	var seen []string
	for _, rec := range te.records(te.e, r.ID) {
		b, _ := json.Marshal(rec)
		seen = append(seen, string(b))
	}
	ledger, err := te.st.Ledger(te.ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range ledger {
		seen = append(seen, string(en.Result), en.Error)
	}
	got, _ := te.st.GetRun(te.ctx, r.ID)
	b, _ := json.Marshal(got)
	seen = append(seen, string(b), string(got.Literals), string(got.Journal))
	all := strings.Join(seen, "\n")
	enc, _ := json.Marshal(val)
	for _, bad := range []string{val, string(enc[1 : len(enc)-1]), "s3cr3t"} {
		if strings.Contains(all, bad) {
			t.Errorf("%q is recorded:\n%s", bad, all)
		}
	}
	if !strings.Contains(all, "out ***") || !strings.Contains(all, `err \"***\"`) {
		t.Errorf("the output is not recorded redacted:\n%s", all)
	}
}

// TestSecretNotSet: a step naming a secret the store lacks fails before it
// starts, saying how to set it.
func TestSecretNotSet(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"leaky.yaml": leakyFlow}, func(o *Options) { o.Secrets = mapSecrets{} })
	r := te.wait(te.e, te.launch("leaky", "").ID)
	if r.Status != store.RunFailed || !strings.Contains(r.Error, "mcp-host secrets set TOK") || r.Steps[0].Attempts != 0 {
		t.Fatalf("run %s (%s), step %+v", r.Status, r.Error, r.Steps[0])
	}
}

// TestRunEnvFromLiterals: a run's steps get the environment its literals
// keep; a run stored before literals kept one gets this process's.
func TestRunEnvFromLiterals(t *testing.T) {
	t.Parallel()
	const src = "steps:\n  - id: env\n    shell: 'echo \"$PATH|${LANG-unset}\"'\nresult: ${{ steps.env.stdout }}\n"
	te := setup(t, nil)
	wf, err := workflows.Parse("envy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := literalsWith(wf, map[string]any{}, map[string]string{"PATH": "/usr/bin:/bin:/kept", "LANG": "C.UTF-8"})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := json.Marshal(map[string]any{"version": 1, "file": "envy.yaml", "source": src, "input": map[string]any{}})
	ids := map[string]string{}
	for name, lits := range map[string]json.RawMessage{"kept": kept, "old": old} {
		r := &store.Run{ID: "run_" + name, Target: "envy", Input: json.RawMessage("{}"), Literals: lits}
		if err := te.st.CreateRun(te.ctx, r); err != nil {
			t.Fatal(err)
		}
		ids[name] = r.ID
	}
	ctx, cancel := context.WithTimeout(te.ctx, time.Minute)
	defer cancel()
	if err := te.e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	lang, ok := os.LookupEnv("LANG")
	if !ok {
		lang = "unset"
	}
	for name, want := range map[string]string{"kept": "/usr/bin:/bin:/kept|C.UTF-8", "old": os.Getenv("PATH") + "|" + lang} {
		r := te.wait(te.e, ids[name])
		var got string
		_ = json.Unmarshal(r.Result, &got)
		if r.Status != store.RunSucceeded || got != want {
			t.Errorf("run %s: %s %q, want %q", name, r.Status, got, want)
		}
	}
}

// TestStalledSaysOwnerGone: Get tells a running run whose lock is free
// (its owner is gone) and a queued one from a run some process holds.
func TestStalledSaysOwnerGone(t *testing.T) {
	t.Parallel()
	te := setup(t, nil)
	for _, r := range []*store.Run{
		{ID: "run_orphan", Target: "x", Status: store.RunRunning, OwnerPID: 999999, Claim: "c1"},
		{ID: "run_queued", Target: "x"},
	} {
		if err := te.st.CreateRun(te.ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) string {
		t.Helper()
		r, err := te.e.Get(te.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r.Stalled
	}
	if s := get("run_orphan"); !strings.Contains(s, "owner pid 999999 gone since ") || !strings.Contains(s, "waiting for a peer") {
		t.Fatalf("orphaned run: stalled %q", s)
	}
	if s := get("run_queued"); !strings.HasPrefix(s, "queued since ") || !strings.Contains(s, "no mcp-host worker is alive") {
		t.Fatalf("queued run: stalled %q", s)
	}
	l, err := te.e.locker.tryLock("run_orphan")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if s := get("run_orphan"); s != "" {
		t.Fatalf("a run whose lock is held: stalled %q", s)
	}
	list, _, err := te.e.List(te.ctx, ListParams{})
	if err != nil || len(list) != 2 {
		t.Fatalf("List: %v %v", list, err)
	}
	for _, r := range list {
		if (r.ID == "run_queued") != (r.Stalled != "") {
			t.Errorf("List: %s stalled %q", r.ID, r.Stalled)
		}
	}
}
