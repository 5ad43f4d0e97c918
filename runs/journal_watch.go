package runs

import (
	"sync"

	"github.com/cairnhq/cairn/internal/wake"
)

// journalWatcher is a journals that tells of writes to a run's journal by
// any process (a step supervisor appends a step's output itself), so that
// a follower waits for them instead of polling the journal's size.
type journalWatcher interface {
	watch(id string) (grew <-chan struct{}, stop func(), err error)
	// closeWatch lets go of the watch (Engine.Stop); a later watch makes
	// a new one.
	closeWatch()
}

// journalWatch is the output folder's one watch (inotify), shared by the
// follows of an engine: closing an inotify instance waits for the kernel
// (an RCU grace period, milliseconds), too slow for each long poll.
type journalWatch struct {
	mu sync.Mutex
	d  *wake.Dir
}

// watch subscribes to writes to id's journal.
func (j *fileJournals) watch(id string) (<-chan struct{}, func(), error) {
	j.w.mu.Lock()
	defer j.w.mu.Unlock()
	if j.w.d != nil && j.w.d.Err() != nil { // the folder went: watch anew
		go j.w.d.Close()
		j.w.d = nil
	}
	if j.w.d == nil {
		d, err := wake.WatchDir(j.dir)
		if err != nil {
			return nil, nil, err
		}
		j.w.d = d
	}
	s := j.w.d.Subscribe(id + journalExt)
	return s.C(), s.Close, nil
}

func (j *fileJournals) closeWatch() {
	j.w.mu.Lock()
	d := j.w.d
	j.w.d = nil
	j.w.mu.Unlock()
	if d != nil {
		d.Close()
	}
}
