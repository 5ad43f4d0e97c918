package cli

import (
	"time"

	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/store"
)

// maxPeersShown bounds the live peers status lists per workspace.
const maxPeersShown = 100

// livePeers drops the peers of this machine whose process ended (a
// registration outlives a SIGKILL until it expires).
func livePeers(ps []store.Peer) []store.Peer {
	out := ps[:0]
	for _, p := range ps {
		if !locks.ProcessGone(p.Hostname, p.PID, p.Started) {
			out = append(out, p)
		}
	}
	return out
}

// printPeers prints the live peers: "peer  host pid N since T".
func (e *env) printPeers(ps []store.Peer) {
	for _, p := range ps {
		e.printf("  peer        %s pid %d since %s\n", p.Hostname, p.PID, p.Since.Local().Format(time.DateTime))
	}
}
