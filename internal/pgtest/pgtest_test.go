package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestURLIsAFreshDatabase(t *testing.T) {
	u := URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("a fresh database has %d tables", n)
	}
}
