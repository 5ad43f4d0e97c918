package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/secrets"
)

// TestSharedSecretNeverStored is TestSecretNeverStored on a store shared
// by several machines, where the run, its ledger, its journal (appended by
// the step supervisor itself) and its step state live in PostgreSQL: the
// secret used in an http header and an exec step's env reaches both, and
// its value (as text, hex or base64) is in no row of any table of the
// database, in no file of the machine's state root but its secrets file,
// and not in `runs show`.
func TestSharedSecretNeverStored(t *testing.T) {
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
	m := newMachines(t, 1, map[string]string{"secret.yaml": secretFlow})[0]
	b := make([]byte, 12)
	rand.Read(b)
	secret := "tok-" + hex.EncodeToString(b)

	set := m.command("secrets", "set", "API_TOKEN")
	set.Stdin = strings.NewReader(secret + "\n")
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secrets set: %v %s", err, out)
	}
	out := m.output("run", "secret", "--input", `{"url": "`+srv.URL+`/hook"}`)
	id := runIDPattern.FindString(out)
	r := m.show(id)
	if r.Status != "succeeded" {
		t.Fatalf("run %s: %s %s\n%s", id, r.Status, r.Error, out)
	}
	shown := out + m.output("runs", "show", id) + m.output("runs", "show", id, "--json") + m.output("watch", id)

	mu.Lock()
	gotAuth := auth
	mu.Unlock()
	seen, _ := os.ReadFile(filepath.Join(m.root, "seen.txt"))
	if gotAuth != "Bearer "+secret || string(seen) != secret {
		t.Fatalf("the secret did not reach its uses: header %q, step env %q", gotAuth, seen)
	}
	if strings.Contains(shown, secret) || !strings.Contains(shown, "out ***") || !strings.Contains(shown, "you sent Bearer ***") {
		t.Fatalf("the CLI's output shows the secret, or not the redacted output:\n%s", shown)
	}

	forms := [][]byte{[]byte(secret), []byte(hex.EncodeToString([]byte(secret))), []byte(base64.StdEncoding.EncodeToString([]byte(secret)))}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, m.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// bytea columns come out as hex: the journal's redacted line is there.
	redacted, journaled := hex.EncodeToString([]byte("out ***")), false
	for _, table := range tables {
		var dump string
		if err := conn.QueryRow(ctx, "SELECT coalesce(string_agg(row_to_json(t)::text, E'\\n'), '') FROM "+table+" t").Scan(&dump); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for _, f := range forms {
			if bytes.Contains([]byte(dump), f) {
				t.Errorf("the secret's value (%s) is in table %s", f, table)
			}
		}
		if strings.HasSuffix(table, ".journal_chunks") && strings.Contains(dump, redacted) {
			journaled = true
		}
	}
	if !journaled {
		t.Fatalf("no journal chunk in %v holds the step's redacted output: the journal was not in the database", tables)
	}
	err = filepath.WalkDir(m.state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) == secrets.FileName {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret's value is in %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
