package postgres

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded file: NNNN_name.sql, applied in version order.
type migration struct {
	version  int
	name     string
	body     string
	checksum string // sha256 of body, hex
}

// migrations returns the embedded migrations in version order.
func migrations() []migration {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err) // embedded at build time
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			panic("postgres migration " + e.Name() + ": the name must be NNNN_name.sql")
		}
		body, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		out = append(out, migration{version: v, name: e.Name(), body: string(body), checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			panic("postgres migrations " + out[i-1].name + " and " + out[i].name + " share a version")
		}
	}
	return out
}

// migrateLockKey names the advisory lock that serialises the migrations
// of one schema across hosts (advisory locks are per database).
func migrateLockKey(schema string) string { return "cairn.migrate:" + schema }

// migrate creates the schema when missing and applies the migrations it
// lacks, in one transaction under an advisory lock: hosts opening at once
// wait for each other and only the first applies anything. Applied
// migrations are checked against the embedded ones by checksum.
func (s *Store) migrate(ctx context.Context, workspaceID string) error {
	s.migrated = 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", migrateLockKey(s.schema)); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		stmts := []string{
			"CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{s.schema}.Sanitize(),
			`CREATE TABLE IF NOT EXISTS schema_migrations (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				checksum   text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`,
		}
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		applied, err := appliedMigrations(ctx, tx)
		if err != nil {
			return err
		}
		if err := checkApplied(applied); err != nil {
			return err
		}
		for _, m := range migrations() {
			if _, ok := applied[m.version]; ok {
				continue
			}
			if _, err := tx.Exec(ctx, m.body); err != nil {
				return fmt.Errorf("apply %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, $3)", m.version, m.name, m.checksum); err != nil {
				return fmt.Errorf("record %s: %w", m.name, err)
			}
			s.migrated++
		}
		return claimWorkspace(ctx, tx, workspaceID)
	})
	if err != nil {
		return fmt.Errorf("migrate store schema %s: %w", s.schema, err)
	}
	return nil
}

type appliedMigration struct{ name, checksum string }

func appliedMigrations(ctx context.Context, tx pgx.Tx) (map[int]appliedMigration, error) {
	rows, err := tx.Query(ctx, "SELECT version, name, checksum FROM schema_migrations")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int]appliedMigration)
	for rows.Next() {
		var v int
		var a appliedMigration
		if err := rows.Scan(&v, &a.name, &a.checksum); err != nil {
			return nil, err
		}
		out[v] = a
	}
	return out, rows.Err()
}

// checkApplied refuses a schema migrated by a newer binary (a version
// this one does not know) or with a migration whose text changed since
// it was applied.
func checkApplied(applied map[int]appliedMigration) error {
	known := make(map[int]migration)
	for _, m := range migrations() {
		known[m.version] = m
	}
	for v, a := range applied {
		m, ok := known[v]
		switch {
		case !ok:
			return fmt.Errorf("migration %s was applied by a newer mcp-host; upgrade mcp-host", a.name)
		case m.checksum != a.checksum:
			return fmt.Errorf("migration %s differs from the one applied (checksum %s, applied %s); this mcp-host does not match the database: use the release that created it", m.name, m.checksum[:12], a.checksum[:12])
		}
	}
	return nil
}

// claimWorkspace records the workspace id in a new schema and refuses one
// that holds another workspace (ids that map to the same schema name,
// such as "a-b" and "a_b").
func claimWorkspace(ctx context.Context, tx pgx.Tx, id string) error {
	var got string
	err := tx.QueryRow(ctx, "SELECT workspace_id FROM workspace").Scan(&got)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		_, err = tx.Exec(ctx, "INSERT INTO workspace (workspace_id) VALUES ($1)", id)
		return err
	case err != nil:
		return err
	case got != id:
		return fmt.Errorf("the schema holds workspace %q, not %q: choose another workspace_id", got, id)
	}
	return nil
}
