// Package pgtest gives tests a fresh PostgreSQL database of their own on
// the server CAIRN_TEST_POSTGRES names (.ci/postgres.sh starts one), and
// skips them, saying how to run them, when it names none.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the server's URL (any database on it; the tests create
// their own).
const EnvVar = "CAIRN_TEST_POSTGRES"

// Skip is what a skipped test says.
const Skip = EnvVar + " is not set: the PostgreSQL tests need a server; run " +
	"`eval \"$(.ci/postgres.sh start /tmp/cairn-pg)\"` first (it installs and starts a throwaway cluster), " +
	"or point " + EnvVar + " at a server where this user may create databases"

// Available reports whether a server is configured.
func Available() bool { return os.Getenv(EnvVar) != "" }

// URL creates an empty database for t and returns its URL; the database is
// dropped when t ends. Without a server, t is skipped.
func URL(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvVar)
	if admin == "" {
		t.Skip(Skip)
	}
	name := "cairn_test_" + randomHex(8)
	exec(t, admin, "CREATE DATABASE "+name)
	t.Cleanup(func() { exec(t, admin, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s: %v", EnvVar, err)
	}
	u.Path = "/" + name
	return u.String()
}

func exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s (%s): %v", EnvVar, dsn, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// WorkspaceID returns a fresh workspace id: tests that share one database
// (one URL per test or per package) give each store its own workspace,
// hence its own schema.
func WorkspaceID() string { return "test_" + randomHex(6) }
