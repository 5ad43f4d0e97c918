package memory

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/cairnhq/cairn/store"
)

var _ store.PeerStore = (*Store)(nil)

func (s *Store) RegisterPeer(ctx context.Context, p store.PeerParams) (store.Peer, error) {
	var out store.Peer
	err := s.write(ctx, "peer.register", func() error {
		var cur *store.Peer
		if c, ok := s.peers[p.ID]; ok {
			cur = &c
		}
		next, err := store.PlanPeer(cur, p)
		if err != nil {
			return err
		}
		if s.peers == nil {
			s.peers = map[string]store.Peer{}
		}
		maps.DeleteFunc(s.peers, func(_ string, q store.Peer) bool { return !q.Live(next.Renewed) })
		s.peers[p.ID] = next
		out = next
		return nil
	})
	return out, err
}

func (s *Store) RemovePeer(ctx context.Context, id string) error {
	return s.write(ctx, "peer.remove", func() error {
		delete(s.peers, id)
		return nil
	})
}

func (s *Store) LivePeers(ctx context.Context, now time.Time, limit int) ([]store.Peer, error) {
	if err := store.CheckPeerLimit(limit); err != nil {
		return nil, err
	}
	out := []store.Peer{}
	err := s.read(func() error {
		for _, p := range s.peers {
			if p.Live(now) {
				out = append(out, p)
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b store.Peer) int { return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.ID, b.ID)) })
	return out[:min(len(out), limit)], err
}
