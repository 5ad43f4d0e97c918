package runs

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func TestConditionFalseSkips(t *testing.T) {
	t.Parallel()
	te := setup(t, map[string]string{"hello.yaml": helloYAML})
	if err := te.e.Start(te.ctx); err != nil {
		t.Fatal(err)
	}
	r := te.launch("hello", "")
	p := te.wait(te.e, r.ID)
	if _, err := te.e.Answer(te.ctx, AnswerParams{RunID: r.ID, QuestionID: p.Question.ID, Answer: "no"}); err != nil {
		t.Fatal(err)
	}
	done := te.wait(te.e, r.ID)
	if done.Status != store.RunSucceeded || stepStatuses(done) != "greet=succeeded confirm=succeeded write=skipped nap=succeeded" {
		t.Fatalf("done: %s %s", done.Status, stepStatuses(done))
	}
	if _, err := os.Stat(te.path("out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the skipped step ran: %v", err)
	}
}

func TestTimeoutRetryAndOutputCap(t *testing.T) {
	t.Parallel()
	te := setup(t, testdata(t, "slow.yaml", "flaky.yaml", "loud.yaml"), func(o *Options) { o.OutputCap = 1000; o.KillGrace = 500 * time.Millisecond })
	slow := te.wait(te.e, te.launch("slow", "").ID)
	if slow.Status != store.RunFailed || slow.Error != "step s: timed out after 200ms" {
		t.Fatalf("slow: %s %q", slow.Status, slow.Error)
	}
	flaky := te.wait(te.e, te.launch("flaky", "").ID)
	if flaky.Status != store.RunSucceeded || flaky.Steps[0].Attempts != 3 {
		t.Fatalf("flaky: %s %s %+v", flaky.Status, flaky.Error, flaky.Steps)
	}
	loud := te.wait(te.e, te.launch("loud", "").ID)
	if loud.Status != store.RunSucceeded {
		t.Fatalf("loud: %s %s", loud.Status, loud.Error)
	}
	l, err := te.st.Ledger(te.ctx, loud.ID)
	if err != nil {
		t.Fatal(err)
	}
	rec := decodeRecord(l[0].Result)
	if len(rec.Stdout) != 1000 || !rec.StdoutTruncated {
		t.Fatalf("kept %d bytes of stdout (truncated %v), want 1000", len(rec.Stdout), rec.StdoutTruncated)
	}
	var journalled int
	for _, r := range te.records(te.e, loud.ID) {
		if r.Type == RecordText {
			journalled += len(r.Text)
		}
	}
	if journalled != 5000 {
		t.Fatalf("the journal got %d bytes of output, want all 5000", journalled)
	}
}

func TestStepEnvironmentAndDir(t *testing.T) {
	t.Parallel()
	te := setup(t, testdata(t, "env.yaml", "out.yaml", "fds.yaml"))
	if err := os.Mkdir(te.path("sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), te.path("link")); err != nil {
		t.Fatal(err)
	}
	r := te.wait(te.e, te.launch("env", "").ID)
	if r.Status != store.RunSucceeded {
		t.Fatalf("env: %s %s", r.Status, r.Error)
	}
	l, _ := te.st.Ledger(te.ctx, r.ID)
	allowed := map[string]bool{"PATH": true, "HOME": true, "LANG": true, "TZ": true, "EXTRA": true, "CAIRN_RUN_ID": true, "CAIRN_STEP_ID": true, "CAIRN_WORKSPACE": true}
	vars := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(decodeRecord(l[0].Result).Stdout), "\n") {
		k, v, _ := strings.Cut(line, "=")
		if !allowed[k] {
			t.Errorf("the step saw %s, which is not allowlisted", k)
		}
		vars[k] = v
	}
	if vars["EXTRA"] != "env" || vars["CAIRN_RUN_ID"] != r.ID || vars["CAIRN_STEP_ID"] != "e" || vars["PATH"] == "" {
		t.Fatalf("step env: %v", vars)
	}
	if got := strings.TrimSpace(decodeRecord(l[1].Result).Stdout); got != te.path("sub") {
		t.Fatalf("pwd = %q, want %q", got, te.path("sub"))
	}
	// The step inherits nothing of ours: no lock file, no database, no
	// journal (all are close-on-exec).
	fds := te.wait(te.e, te.launch("fds", "").ID)
	l, _ = te.st.Ledger(te.ctx, fds.ID)
	if fds.Status != store.RunSucceeded {
		t.Fatalf("fds: %s %s", fds.Status, fds.Error)
	}
	for _, target := range strings.Fields(decodeRecord(l[0].Result).Stdout) {
		if strings.HasPrefix(target, te.ws.StateDir) {
			t.Errorf("the step inherited a descriptor of %s", target)
		}
	}
	out := te.wait(te.e, te.launch("out", "").ID)
	if out.Status != store.RunFailed || !strings.Contains(out.Error, "leaves the workspace") {
		t.Fatalf("a dir symlinked out of the workspace: %s %q", out.Status, out.Error)
	}
}

func TestHTTPStep(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"method": %q, "auth": %q, "body": %q}`, r.Method, r.Header.Get("Authorization"), body)
		default:
			http.Error(w, "nope", http.StatusTeapot)
		}
	}))
	defer srv.Close()
	te := setup(t, map[string]string{
		"call.yaml": `
input:
  type: object
  properties: {base: {type: string}}
steps:
  - id: post
    http:
      method: POST
      url: "${{ input.base }}/echo?token=secret"
      headers: {Authorization: "Bearer t"}
      body: '{"x": 1}'
  - id: use
    exec: ["echo", "${{ steps.post.output.method }} ${{ steps.post.status_code }} ${{ steps.post.output.auth }}"]
result: ${{ steps.use.stdout }}
`,
		"teapot.yaml": "input:\n  type: object\n  properties: {base: {type: string}}\nsteps:\n  - id: get\n    http:\n      url: \"${{ input.base }}/other\"\n",
	})
	in := fmt.Sprintf(`{"base": %q}`, srv.URL)
	r := te.wait(te.e, te.launch("call", in).ID)
	if r.Status != store.RunSucceeded || string(r.Result) != `"POST 200 Bearer t"` || r.Steps[0].StatusCode != 200 {
		t.Fatalf("call: %s %s %s %+v", r.Status, r.Result, r.Error, r.Steps)
	}
	for _, rec := range te.records(te.e, r.ID) {
		if strings.Contains(rec.Text, "secret") {
			t.Fatalf("the journal shows the URL's query: %+v", rec)
		}
	}
	bad := te.wait(te.e, te.launch("teapot", in).ID)
	if bad.Status != store.RunFailed || !strings.Contains(bad.Error, "unexpected status 418") || bad.Steps[0].StatusCode != 418 {
		t.Fatalf("teapot: %s %q %+v", bad.Status, bad.Error, bad.Steps)
	}
}
