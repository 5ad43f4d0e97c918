package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/storetest"
)

func newTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "state.sqlite3"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return newTestStore(t) })
}

func TestGroupCommitKeepsEachOperationApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	defer s.Close()
	if err := s.write(ctx, "test.create", func(tx *sql.Tx) error {
		_, err := tx.Exec("CREATE TABLE t (n INTEGER PRIMARY KEY)")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opCtx := store.WithOpID(ctx, fmt.Sprintf("op-%d", i))
			errs <- s.write(opCtx, "test.insert", func(tx *sql.Tx) error {
				if _, err := tx.Exec("INSERT INTO t (n) VALUES (?)", i); err != nil {
					return err
				}
				if i%10 == 0 {
					return errBoom // this one's insert must be rolled back alone
				}
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if errors.Is(err, errBoom) {
			failed++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if failed != n/10 {
		t.Fatalf("%d operations failed, want %d", failed, n/10)
	}
	var count int
	if err := s.Reader().QueryRow("SELECT count(*) FROM t WHERE n % 10 != 0").Scan(&count); err != nil {
		t.Fatal(err)
	}
	var bad int
	s.Reader().QueryRow("SELECT count(*) FROM t WHERE n % 10 = 0").Scan(&bad)
	if count != n-n/10 || bad != 0 {
		t.Fatalf("rows kept = %d (want %d), rows of failed operations = %d (want 0)", count, n-n/10, bad)
	}
	for _, c := range []struct {
		op   string
		want store.Outcome
	}{{"op-1", store.Committed}, {"op-10", store.NotCommitted}, {"op-nope", store.NotCommitted}} {
		if got, err := s.Outcome(ctx, c.op); err != nil || got != c.want {
			t.Errorf("Outcome(%s) = %v, %v; want %v", c.op, got, err, c.want)
		}
	}
	// Repeating a committed operation id is refused, not applied twice.
	err := s.write(store.WithOpID(ctx, "op-1"), "test.insert", func(tx *sql.Tx) error {
		_, err := tx.Exec("INSERT INTO t (n) VALUES (1000)")
		return err
	})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("repeated operation: %v, want ErrExists", err)
	}
}

var errBoom = errors.New("boom")

func TestOpenRefusesWhatIsNotOurs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name    string
		prepare func(t *testing.T, p string)
		want    string
	}{
		{"symlink", func(t *testing.T, p string) {
			real := p + ".real"
			mustOpenClose(t, real)
			if err := os.Symlink(real, p); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"foreign sqlite", func(t *testing.T, p string) {
			db, err := sql.Open("sqlite", p)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('precious')"); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, "not a Cairn state database"},
		{"not sqlite", func(t *testing.T, p string) {
			if err := os.WriteFile(p, bytes.Repeat([]byte("precious text\n"), 400), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not an SQLite file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), "state.sqlite3")
			c.prepare(t, p)
			before := snapshotDir(t, filepath.Dir(p))
			_, err := Open(ctx, p, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("Open: %v; want an error naming %s and saying %q", err, p, c.want)
			}
			if after := snapshotDir(t, filepath.Dir(p)); !maps.Equal(before, after) {
				t.Fatalf("folder changed by a refused open:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestNewDatabaseIsPrivate(t *testing.T) {
	t.Parallel()
	s := newTestStore(t)
	defer s.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		fi, err := os.Stat(s.Path() + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", s.Path()+suffix, fi.Mode().Perm())
		}
	}
}

func TestReopenKeepsSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "state.sqlite3")
	for range 2 {
		s, err := Open(ctx, p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.IntegrityCheck(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	ro, err := Open(ctx, p, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Counts(ctx); err != nil {
		t.Fatal(err)
	}
}

func mustOpenClose(t *testing.T, p string) {
	t.Helper()
	s, err := Open(context.Background(), p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

// snapshotDir maps each file name in dir to its size and content hash.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
}

func TestBackupIsAConsistentPrivateCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	defer s.Close()
	for i := range 20 {
		if err := s.CreateRun(ctx, &store.Run{ID: fmt.Sprintf("run_%d", i), Target: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	dest := filepath.Join(t.TempDir(), "backup.sqlite3")
	if err := s.Backup(ctx, dest); err != nil {
		t.Fatal(err)
	}
	if err := s.Backup(ctx, dest); err == nil || !strings.Contains(err.Error(), "choose a new file name") {
		t.Fatalf("second backup to the same file: %v; want a refusal", err)
	}
	fi, err := os.Stat(dest)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v; want 0600", fi, err)
	}
	b, err := Open(ctx, dest, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := b.Counts(ctx); err != nil || c.Runs != 20 {
		t.Fatalf("backup counts %+v, %v; want 20 runs", c, err)
	}
}

// A declared statement is prepared on first use, on the write connection
// after the batch that used it and on the read pool, and kept.
func TestStatementsArePreparedOnFirstUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTestStore(t)
	defer s.Close()
	if len(s.wstmts) != 0 {
		t.Fatalf("Open prepared %d write statements, want none", len(s.wstmts))
	}
	committed := make(chan struct{}, 1)
	s.afterCommit = func() { committed <- struct{}{} }
	for _, id := range []string{"run_1", "run_2"} {
		if err := s.CreateRun(ctx, &store.Run{ID: id, Target: "t", Literals: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		<-committed // the writer goroutine is done with the caches
		for _, q := range []string{qSavepoint, qRecordOp, qRelease} {
			if s.wstmts[q] == nil {
				t.Errorf("after %s, %q is not prepared on the write connection", id, q)
			}
		}
		if len(s.wpending) != 0 {
			t.Errorf("after %s, %d statements still queued", id, len(s.wpending))
		}
	}
	if _, err := s.Outcome(ctx, "op-unknown"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.rstmts.Load(qOperation); !ok {
		t.Errorf("%q is not prepared on the read pool after use", qOperation)
	}
}
