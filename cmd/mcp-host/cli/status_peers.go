package cli

import (
	"time"

	"github.com/cairnhq/cairn/store"
)

// maxPeersShown bounds the live peers status lists per workspace.
const maxPeersShown = 100

// printPeers prints the live peers: "peer  host pid N since T".
func (e *env) printPeers(ps []store.Peer) {
	for _, p := range ps {
		e.printf("  peer        %s pid %d since %s\n", p.Hostname, p.PID, p.Since.Local().Format(time.DateTime))
	}
}
