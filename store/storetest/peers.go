package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func testPeers(t *testing.T, newStore NewFunc) {
	runCases(t, newStore, []storeCase{
		{"register, renew, expire, remove", testPeerLifecycle},
		{"many peers register at once", testPeerRace},
	})
}

// peers returns s as a PeerStore, or skips: the interface is optional.
func peers(t *testing.T, s store.Store) store.PeerStore {
	t.Helper()
	ps, ok := s.(store.PeerStore)
	if !ok {
		t.Skipf("%T keeps no peers (store.PeerStore)", s)
	}
	return ps
}

const peerTTL = 5 * time.Second

func registerPeer(ps store.PeerStore, id string, pid int, now time.Time) (store.Peer, error) {
	return ps.RegisterPeer(context.Background(), store.PeerParams{ID: id, Hostname: "box-" + id, PID: pid, Started: autT0.Add(-time.Hour), Now: now, TTL: peerTTL})
}

func livePeers(t *testing.T, ps store.PeerStore, now time.Time) []store.Peer {
	t.Helper()
	got, err := ps.LivePeers(context.Background(), now, 100)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func testPeerLifecycle(t *testing.T, s store.Store) {
	ctx := context.Background()
	ps := peers(t, s)
	if got := livePeers(t, ps, autT0); len(got) != 0 {
		t.Fatalf("peers of an empty store: %+v", got)
	}
	if _, err := ps.RegisterPeer(ctx, store.PeerParams{ID: "a", Now: autT0}); err == nil {
		t.Fatal("a registration without a length was accepted")
	}
	if _, err := ps.LivePeers(ctx, autT0, 0); err == nil {
		t.Fatal("LivePeers with limit 0 was accepted")
	}
	a, err := registerPeer(ps, "a", 11, autT0)
	if err != nil || a.Hostname != "box-a" || a.PID != 11 || !a.Since.Equal(autT0) || !a.Expires.Equal(autT0.Add(peerTTL)) || !a.Started.Equal(autT0.Add(-time.Hour)) {
		t.Fatalf("first registration: %+v, %v", a, err)
	}
	if _, err := registerPeer(ps, "b", 22, autT0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// A renewal keeps Since and moves the expiry.
	at := autT0.Add(4 * time.Second)
	r, err := registerPeer(ps, "a", 11, at)
	if err != nil || !r.Since.Equal(autT0) || !r.Renewed.Equal(at) || !r.Expires.Equal(at.Add(peerTTL)) {
		t.Fatalf("renewal: %+v, %v", r, err)
	}
	got := livePeers(t, ps, at)
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" || got[0] != r {
		t.Fatalf("live peers, oldest first: %+v", got)
	}
	if got, err := ps.LivePeers(ctx, at, 1); err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("live peers, limit 1: %+v, %v", got, err)
	}
	// b was last renewed at +1s: gone at +6s; a lives until +9s.
	late := autT0.Add(6 * time.Second)
	if got := livePeers(t, ps, late); len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("live peers once b expired: %+v", got)
	}
	// A registration forgets gone peers: b comes back as a new peer.
	if _, err := registerPeer(ps, "c", 33, late); err != nil {
		t.Fatal(err)
	}
	back := late.Add(time.Millisecond)
	b, err := registerPeer(ps, "b", 22, back)
	if err != nil || !b.Since.Equal(back) {
		t.Fatalf("b registered again after it was gone: %+v, %v (want since %s)", b, err, back)
	}
	if err := ps.RemovePeer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := ps.RemovePeer(ctx, "never"); err != nil {
		t.Fatalf("remove of an unknown peer: %v", err)
	}
	if got := livePeers(t, ps, back); len(got) != 2 || got[0].ID != "c" || got[1].ID != "b" {
		t.Fatalf("live peers after a was removed: %+v", got)
	}
}

func testPeerRace(t *testing.T, s store.Store) {
	ps := peers(t, s)
	const n = 8
	concurrently(t, n, func(i int) error {
		for round := range 5 {
			if _, err := registerPeer(ps, string(rune('a'+i)), i, autT0.Add(time.Duration(round)*time.Millisecond)); err != nil {
				return err
			}
		}
		return nil
	})
	if got := livePeers(t, ps, autT0.Add(time.Second)); len(got) != n {
		t.Fatalf("%d live peers, want %d: %+v", len(got), n, got)
	}
}
