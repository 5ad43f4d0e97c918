package automations

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func writeFile(t testing.TB, p, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFilesMonitorLaunchesOncePerChange(t *testing.T) {
	t.Parallel()
	e := setup(t)
	writeFile(t, filepath.Join(e.dir, "src", "a.go"), "package a")
	writeFile(t, filepath.Join(e.dir, "src", "deep", "b.go"), "package b")
	writeFile(t, filepath.Join(e.dir, "notes.txt"), "not watched")
	a := e.create(Spec{Key: "test-on-save", Files: []string{"src/**/*.go"}, Every: "10s"})

	// The first poll records the baseline and launches nothing.
	e.step()
	st := e.get(a.ID).State
	if st.Observation == "" || e.runCount() != 0 {
		t.Fatalf("after the first poll: observation %q, %d runs", st.Observation, e.runCount())
	}
	// No change, or a change outside the glob: nothing.
	writeFile(t, filepath.Join(e.dir, "notes.txt"), "still not watched")
	writeFile(t, filepath.Join(e.dir, "src", "c.txt"), "not a .go file")
	for i := 1; i <= 3; i++ {
		e.advanceTo(t0.Add(time.Duration(i) * 10 * time.Second))
	}
	if n := e.runCount(); n != 0 {
		t.Fatalf("%d runs without a change", n)
	}
	// A change deep under the glob: exactly one run, however often it polls.
	writeFile(t, filepath.Join(e.dir, "src", "deep", "b.go"), "package b // edited")
	for i := 4; i <= 7; i++ {
		e.advanceTo(t0.Add(time.Duration(i) * 10 * time.Second))
	}
	fs := e.fires(a.ID)
	if n := e.runCount(); n != 1 || len(fs) != 1 || !fs[0].Nominal.Equal(t0.Add(40*time.Second)) {
		t.Fatalf("%d runs, fires %v; want one at 40s", n, nominals(fs))
	}
	after := e.get(a.ID).State
	if after.Observation == st.Observation || after.Pending != nil {
		t.Fatalf("state after the launch: %+v", after)
	}
	// A new file matching the glob is a change too.
	e.runs.finish(fs[0].RunID, t0.Add(75*time.Second))
	writeFile(t, filepath.Join(e.dir, "src", "new.go"), "package src")
	e.advanceTo(t0.Add(80 * time.Second))
	if n := e.runCount(); n != 2 {
		t.Fatalf("%d runs after a new file, want 2", n)
	}
}

func TestMonitorRetriesAFailedLaunch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := filepath.Join(e.dir, "config.json")
	writeFile(t, p, `{"v":1}`)
	a := e.create(Spec{Key: "reload", Files: []string{"config.json"}, Every: "10s"})
	e.step() // baseline

	e.targets.failing.Store(true)
	writeFile(t, p, `{"v":2}`)
	e.advanceTo(t0.Add(10 * time.Second))
	e.advanceTo(t0.Add(20 * time.Second))
	st := e.get(a.ID).State
	if st.Pending == nil || st.Pending.Attempts != 2 || !strings.Contains(st.Pending.Error, "broken") || e.runCount() != 0 {
		t.Fatalf("after two failed launches: %+v, %d runs", st.Pending, e.runCount())
	}
	// Even if the file changes back, the change that was seen is launched:
	// the pending launch is durable and retried until handed over.
	writeFile(t, p, `{"v":1}`)
	e.targets.failing.Store(false)
	e.advanceTo(t0.Add(30 * time.Second))
	fs := e.fires(a.ID)
	if len(fs) != 1 || !fs[0].Nominal.Equal(t0.Add(10*time.Second)) || e.runCount() != 1 {
		t.Fatalf("fires %v, %d runs; want one, at the first attempt's nominal time", nominals(fs), e.runCount())
	}
	if st := e.get(a.ID).State; st.Pending != nil || st.LastError != "" {
		t.Fatalf("state after the launch: %+v", st)
	}
	// The file now differs from the launched observation (v2): that is one
	// more change, launched once when the run settled (overlap skip would
	// otherwise consume it).
	e.runs.finish(fs[0].RunID, t0.Add(31*time.Second))
	e.advanceTo(t0.Add(40 * time.Second))
	e.advanceTo(t0.Add(50 * time.Second))
	if n := e.runCount(); n != 2 {
		t.Fatalf("%d runs, want 2", n)
	}
}

func TestHTTPMonitor(t *testing.T) {
	t.Parallel()
	var body atomic.Value
	body.Store("v1")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(body.Load().(string)))
	}))
	defer srv.Close()
	e := setup(t)
	a := e.create(Spec{Key: "health", URL: srv.URL + "/health", Every: "1m"})
	e.step()
	e.advanceTo(t0.Add(time.Minute))
	if n := e.runCount(); n != 0 {
		t.Fatalf("%d runs without a change", n)
	}
	body.Store("v2")
	e.advanceTo(t0.Add(2 * time.Minute))
	e.advanceTo(t0.Add(3 * time.Minute))
	if fs := e.fires(a.ID); len(fs) != 1 || e.runCount() != 1 {
		t.Fatalf("fires %v", nominals(fs))
	}
	// An unreachable server is an error, not a change.
	srv.Close()
	e.advanceTo(t0.Add(4 * time.Minute))
	if st := e.get(a.ID).State; st.LastError == "" || e.runCount() != 1 {
		t.Fatalf("after the server went away: %+v", st)
	}
}

func TestGlobMatching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		glob, name string
		want       bool
	}{
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/x/y/a.go", true},
		{"src/**/*.go", "src/a.txt", false},
		{"src/**/*.go", "lib/a.go", false},
		{"**", "a/b/c", true},
		{"*.md", "README.md", true},
		{"*.md", "docs/a.md", false},
		{"docs/*/index.md", "docs/x/index.md", true},
		{"docs/*/index.md", "docs/x/y/index.md", false},
	} {
		if got := matchSegs(strings.Split(tc.glob, "/"), strings.Split(tc.name, "/")); got != tc.want {
			t.Errorf("match(%q, %q) = %v, want %v", tc.glob, tc.name, got, tc.want)
		}
	}
}

func TestFilesMonitorRefusesTooManyFilesAndParentGlobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := newDigester(dir, nil)
	d.maxFiles = 2
	for _, n := range []string{"a", "b", "c"} {
		writeFile(t, filepath.Join(dir, "f", n+".txt"), "x")
	}
	if _, err := d.files([]string{"f/a.txt", "f/b.txt"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.files([]string{"f/*.txt"}); !errors.Is(err, ErrTooManyFiles) {
		t.Fatalf("three files over a cap of two: %v", err)
	}
	for _, g := range []string{"../x", "a/../../x", "/etc/passwd"} {
		if _, err := d.files([]string{g}); err == nil {
			t.Fatalf("glob %q was accepted", g)
		}
	}
}
