package runs

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/cairnhq/cairn/store"
)

// TestDirInterpolated: `dir: ${{ input.d }}` runs the step in that folder;
// a value that leaves the workspace fails the step before it starts.
func TestDirInterpolated(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"where.yaml": `
input:
  type: object
  properties:
    d: {type: string}
steps:
  - id: here
    exec: [pwd]
    dir: ${{ input.d }}
result: ${{ steps.here.stdout }}
`})
	if err := os.MkdirAll(te.path("sub/inner"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := te.wait(te.e, te.launch("where", `{"d": "sub/inner"}`).ID)
	var got string
	_ = json.Unmarshal(r.Result, &got)
	if r.Status != store.RunSucceeded || !strings.HasSuffix(got, "/sub/inner") {
		t.Fatalf("run %s (%s): pwd %q, want …/sub/inner", r.Status, r.Error, got)
	}
	r = te.wait(te.e, te.launch("where", `{"d": "../out"}`).ID)
	if r.Status != store.RunFailed || !strings.Contains(r.Error, "leaves the workspace") || r.Steps[0].Attempts != 0 {
		t.Fatalf("dir leaving the workspace: run %s (%s), step %+v", r.Status, r.Error, r.Steps[0])
	}
}
