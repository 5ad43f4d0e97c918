// Package stuckwriter is the child process of tests of a writer stalled
// inside a transaction: it takes a database's write lock (BEGIN
// IMMEDIATE), says "holding" on stdout and keeps the lock until its stdin
// closes (or it is killed; a test SIGSTOPs it to freeze it there).
package stuckwriter

import (
	"database/sql"
	"fmt"
	"io"
	"os"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Env names the role: its value is the database path.
const Env = "CAIRN_STUCK_WRITER_DB"

// Main plays the role when Env is set and returns the exit code; ok is
// false when Env is not set.
func Main() (code int, ok bool) {
	p := os.Getenv(Env)
	if p == "" {
		return 0, false
	}
	return run(p), true
}

func run(p string) int {
	db, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := tx.Rollback(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}
