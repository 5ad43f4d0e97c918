package cli

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/secrets"
)

const secretFlow = `
input:
  type: object
  properties:
    url: {type: string}
steps:
  - id: call
    http:
      url: ${{ input.url }}
      headers: {Authorization: "Bearer ${{ secrets.API_TOKEN }}"}
  - id: use
    exec: [sh, -c, 'printf %s "$TOKEN" > seen.txt; echo "out $TOKEN"; echo "err $TOKEN" >&2']
    env: {TOKEN: "${{ secrets.API_TOKEN }}"}
result: '${{ {"echo": steps.call.body, "out": steps.use.stdout} }}'
`

// TestSecretNeverStored: a secret used in an http header and in an exec
// step's env reaches the server and the step, and appears nowhere under
// the state root (database, WAL, journals, locks, logs: every file), in
// no MCP tool result and in no `runs show` output: the echoed response
// body and the step's output are recorded with "***" instead.
func TestSecretNeverStored(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		auth string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		w.Write([]byte("you sent " + r.Header.Get("Authorization")))
	}))
	defer srv.Close()
	c := newCLIWS(t, map[string]string{"secret.yaml": secretFlow})
	b := make([]byte, 12)
	rand.Read(b)
	secret := "tok-" + hex.EncodeToString(b)

	if code, out, errs := c.runIn(secret+"\n", "secrets", "set", "API_TOKEN"); code != 0 {
		t.Fatalf("secrets set: exit %d %s %s", code, out, errs)
	}
	if code, out, _ := c.run("secrets", "list"); code != 0 || strings.TrimSpace(out) != "API_TOKEN" {
		t.Fatalf("secrets list: exit %d %q", code, out)
	}

	client, stop := c.serveMCP()
	var results []string
	r := call(t, client, "launch_run", map[string]any{"target": "secret", "input": map[string]any{"url": srv.URL + "/hook"}, "wait_seconds": 60})
	var launched struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(r.StructuredContent, &launched); err != nil || launched.Status != "succeeded" {
		t.Fatalf("launch_run: %v %s", err, r.StructuredContent)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"launch_run", nil},
		{"get_run", map[string]any{"run_id": launched.ID}},
		{"read_run_output", map[string]any{"run_id": launched.ID}},
		{"list_runs", map[string]any{}},
	} {
		if tc.args != nil {
			r = call(t, client, tc.tool, tc.args)
		}
		results = append(results, tc.tool+": "+r.Text()+string(r.StructuredContent))
	}
	if code, errOut := stop(); code != 0 {
		t.Fatalf("serve exited %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"runs", "show", launched.ID}, {"runs", "show", launched.ID, "--json"}, {"runs"}, {"watch", launched.ID}} {
		code, out, errs := c.run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errs)
		}
		results = append(results, strings.Join(args, " ")+": "+out+errs)
	}

	// The secret was used: by the server and by the step.
	mu.Lock()
	gotAuth := auth
	mu.Unlock()
	seen, _ := os.ReadFile(filepath.Join(c.root, "seen.txt"))
	if gotAuth != "Bearer "+secret || string(seen) != secret {
		t.Fatalf("the secret did not reach its uses: header %q, step env %q", gotAuth, seen)
	}
	// ... and is recorded nowhere.
	for _, res := range results {
		if strings.Contains(res, secret) {
			t.Errorf("the secret's value is in %s", res)
		}
	}
	if !strings.Contains(strings.Join(results, "\n"), "out ***") || !strings.Contains(strings.Join(results, "\n"), "you sent Bearer ***") {
		t.Errorf("the output is not shown redacted:\n%s", strings.Join(results, "\n"))
	}
	var files int
	err := filepath.WalkDir(c.state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret's value is in %s", p)
		}
		// Encoded, it may be only in the secrets file (which keeps it in
		// base64, mode 0600): not in the database, a journal or a log.
		for _, enc := range []string{base64.StdEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))} {
			if filepath.Base(p) != secrets.FileName && bytes.Contains(b, []byte(enc)) {
				t.Errorf("the secret's value is in %s, encoded as %s", p, enc)
			}
		}
		if filepath.Base(p) == secrets.FileName {
			if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want 0600", p, fi.Mode().Perm())
			}
		}
		return nil
	})
	if err != nil || files < 3 {
		t.Fatalf("walk the state root: %v (%d files)", err, files)
	}
}

// TestSecretsCommands: set from stdin, list names only, delete; bad names
// are usage errors; a file others can read is refused with the fix.
func TestSecretsCommands(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, nil)
	if code, _, errs := c.runIn("v1\n", "secrets", "set", "B_KEY"); code != 0 {
		t.Fatalf("set: exit %d %s", code, errs)
	}
	if code, _, errs := c.runIn("v2", "secrets", "set", "A_KEY"); code != 0 {
		t.Fatalf("set without a newline: exit %d %s", code, errs)
	}
	if code, out, _ := c.run("secrets", "list"); code != 0 || out != "A_KEY\nB_KEY\n" {
		t.Fatalf("list: exit %d %q", code, out)
	}
	if code, out, _ := c.run("--json", "secrets", "list"); code != 0 || strings.Contains(out, "v1") || !strings.Contains(out, `"B_KEY"`) {
		t.Fatalf("list --json: exit %d %q", code, out)
	}
	for _, args := range [][]string{{"secrets", "set", "lower"}, {"secrets", "delete", "1X"}} {
		if code, _, errs := c.runIn("v", args...); code != ExitUsage || !strings.Contains(errs, "bad secret name") {
			t.Errorf("%v: exit %d %q", args, code, errs)
		}
	}
	if code, _, errs := c.run("secrets", "set", "EMPTY"); code != 1 || !strings.Contains(errs, "no value") {
		t.Errorf("set with empty stdin: exit %d %q", code, errs)
	}
	if code, out, errs := c.run("secrets", "delete", "A_KEY"); code != 0 || out != "secret A_KEY deleted\n" {
		t.Fatalf("delete: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := c.run("secrets", "delete", "A_KEY"); code != 1 || !strings.Contains(errs, "not set") {
		t.Fatalf("delete again: exit %d %q", code, errs)
	}
	p := filepath.Join(c.ws.StateDir, secrets.FileName)
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := c.run("secrets", "list"); code != 1 || !strings.Contains(errs, "chmod 600 "+p) {
		t.Fatalf("list with a 0640 file: exit %d %q", code, errs)
	}
}
