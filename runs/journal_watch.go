package runs

import "github.com/cairnhq/cairn/internal/wake"

// journalWatcher is a journals that tells of writes to a run's journal by
// any process (a step supervisor appends a step's output itself), so that
// a follower waits for them instead of polling the journal's size.
type journalWatcher interface {
	watch(id string) (grew <-chan struct{}, stop func(), err error)
}

// watch watches the output folder (inotify) for writes to id's journal.
func (j *fileJournals) watch(id string) (<-chan struct{}, func(), error) {
	d, err := wake.WatchDir(j.dir)
	if err != nil {
		return nil, nil, err
	}
	s := d.Subscribe(id + journalExt)
	return s.C(), func() { s.Close(); d.Close() }, nil
}
