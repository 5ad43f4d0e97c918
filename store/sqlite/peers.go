package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

var _ store.PeerStore = (*Store)(nil)

const peerColumns = "id, hostname, pid, started, since, renewed, expires"

var (
	qGetPeer = prepared("SELECT " + peerColumns + " FROM peers WHERE id = ?")
	qPutPeer = prepared("INSERT INTO peers (" + peerColumns + ") VALUES (?,?,?,?,?,?,?) " +
		"ON CONFLICT (id) DO UPDATE SET hostname = excluded.hostname, pid = excluded.pid, started = excluded.started, " +
		"renewed = excluded.renewed, expires = excluded.expires")
	qForgetPeers = prepared("DELETE FROM peers WHERE expires <= ?")
	qRemovePeer  = prepared("DELETE FROM peers WHERE id = ?")
	qLivePeers   = prepared("SELECT " + peerColumns + " FROM peers WHERE expires > ? ORDER BY since, id LIMIT ?")
)

func (s *Store) RegisterPeer(ctx context.Context, p store.PeerParams) (store.Peer, error) {
	var out store.Peer
	err := s.write(ctx, "peer.register", func(tx *sql.Tx) error {
		var cur *store.Peer
		c, err := scanPeer(s.txQueryRow(ctx, tx, qGetPeer, p.ID))
		switch {
		case err == nil:
			cur = &c
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("read peer %s: %w", p.ID, err)
		}
		next, err := store.PlanPeer(cur, p)
		if err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, qForgetPeers, next.Renewed.UnixMilli()); err != nil {
			return fmt.Errorf("forget gone peers: %w", err)
		}
		if _, err := s.exec(ctx, tx, qPutPeer, next.ID, next.Hostname, next.PID, next.Started.UnixMilli(),
			next.Since.UnixMilli(), next.Renewed.UnixMilli(), next.Expires.UnixMilli()); err != nil {
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
	return s.write(ctx, "peer.remove", func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, qRemovePeer, id); err != nil {
			return fmt.Errorf("remove peer %s: %w", id, err)
		}
		return nil
	})
}

func (s *Store) LivePeers(ctx context.Context, now time.Time, limit int) ([]store.Peer, error) {
	if err := store.CheckPeerLimit(limit); err != nil {
		return nil, err
	}
	rows, err := s.query(ctx, qLivePeers, store.At(now).UnixMilli(), limit)
	out, err := scanRows(rows, err, scanPeer, []store.Peer{})
	switch {
	case err != nil && strings.Contains(err.Error(), "no such table: peers"):
		return []store.Peer{}, nil // a database read-only commands open unmigrated
	case err != nil:
		return nil, fmt.Errorf("list peers: %w", err)
	}
	return out, nil
}

func scanPeer(row rowScanner) (store.Peer, error) {
	var p store.Peer
	var started, since, renewed, expires int64
	if err := row.Scan(&p.ID, &p.Hostname, &p.PID, &started, &since, &renewed, &expires); err != nil {
		return store.Peer{}, err
	}
	p.Started, p.Since = time.UnixMilli(started).UTC(), time.UnixMilli(since).UTC()
	p.Renewed, p.Expires = time.UnixMilli(renewed).UTC(), time.UnixMilli(expires).UTC()
	return p, nil
}
