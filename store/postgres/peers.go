package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairnhq/cairn/store"
)

var _ store.PeerStore = (*Store)(nil)

const peerColumns = "id, hostname, pid, started, since, renewed, expires"

func (s *Store) RegisterPeer(ctx context.Context, p store.PeerParams) (store.Peer, error) {
	var out store.Peer
	err := s.write(ctx, "peer.register", func(tx pgx.Tx) error {
		var cur *store.Peer
		c, err := scanPeer(tx.QueryRow(ctx, "SELECT "+peerColumns+" FROM peers WHERE id = $1 FOR UPDATE", p.ID))
		switch {
		case err == nil:
			cur = &c
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read peer %s: %w", p.ID, err)
		}
		next, err := store.PlanPeer(cur, p)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "DELETE FROM peers WHERE expires <= $1", next.Renewed); err != nil {
			return fmt.Errorf("forget gone peers: %w", err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO peers ("+peerColumns+") VALUES ($1,$2,$3,$4,$5,$6,$7) "+
			"ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid, started = excluded.started, "+
			"renewed = excluded.renewed, expires = excluded.expires",
			next.ID, next.Hostname, next.PID, next.Started, next.Since, next.Renewed, next.Expires); err != nil {
			return fmt.Errorf("register peer %s: %w", p.ID, err)
		}
		out = next
		return nil
	})
	if err != nil {
		return store.Peer{}, err
	}
	return out, nil
}

func (s *Store) RemovePeer(ctx context.Context, id string) error {
	return s.write(ctx, "peer.remove", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM peers WHERE id = $1", id); err != nil {
			return fmt.Errorf("remove peer %s: %w", id, err)
		}
		return nil
	})
}

func (s *Store) LivePeers(ctx context.Context, now time.Time, limit int) ([]store.Peer, error) {
	if err := store.CheckPeerLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT "+peerColumns+" FROM peers WHERE expires > $1 ORDER BY since, id LIMIT $2", store.At(now), limit)
	if err != nil {
		return nil, fmt.Errorf("list peers: %w", err)
	}
	defer rows.Close()
	out := []store.Peer{}
	for rows.Next() {
		p, err := scanPeer(rows)
		if err != nil {
			return nil, fmt.Errorf("list peers: %w", err)
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list peers: %w", err)
	}
	return out, nil
}

func scanPeer(row pgx.Row) (store.Peer, error) {
	var p store.Peer
	if err := row.Scan(&p.ID, &p.Hostname, &p.PID, &p.Started, &p.Since, &p.Renewed, &p.Expires); err != nil {
		return store.Peer{}, err
	}
	p.Started, p.Since, p.Renewed, p.Expires = p.Started.UTC(), p.Since.UTC(), p.Renewed.UTC(), p.Expires.UTC()
	return p, nil
}
