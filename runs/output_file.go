package runs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/workflows"
)

// A step with `output: file` keeps its whole output in a file in the run's
// folder (<output>/<run-id>/<step-id>.<attempt>.log) instead of the capped
// journal: its lines, stdout and stderr in the order they came, each cut
// only past MaxOutputFileLine, the file past MaxOutputFileBytes. The
// journal holds an output_file record naming the file when the step
// starts, and one with its size when it ends. gc removes the folder with
// the run's journal.

// Caps of a step's output file.
const (
	// MaxOutputFileBytes is the most one step call writes to its file;
	// past it the file ends with a line saying how much was dropped.
	MaxOutputFileBytes = 256 << 20
	// MaxOutputFileLine is the longest line kept whole in the file (the
	// journal's largest line cap).
	MaxOutputFileLine = MaxJournalLineCap
)

// RecordOutputFile names the file a step's output goes to (Event started),
// then its size (Event finished: Lines lines, Dropped bytes past the cap).
const RecordOutputFile = "output_file"

// runFolder is run id's folder under the journal folder dir.
func runFolder(dir, id string) string { return filepath.Join(dir, id) }

// outputFilePath is where a step call's output file is.
func outputFilePath(dir, runID, stepID string, attempt int) string {
	return filepath.Join(runFolder(dir, runID), fmt.Sprintf("%s.%d.log", stepID, attempt))
}

// outputFile is one step call's output file. Its methods are safe for the
// two streams' goroutines.
type outputFile struct {
	// journal writes its output_file records: the execution's journal,
	// or a step supervisor's (which runs the command and gets its lines).
	journal func(Record)
	step    string
	attempt int
	path    string

	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	written int64
	lines   int64
	dropped int64
	err     error
}

// withOutputFile is the hook of an exec or shell step: with `output: file`
// it opens the step's file and returns spec writing its lines there (a
// line may be as long as MaxOutputFileLine), and the file to close when
// the process ended; else spec unchanged and nil. A memory journal (a dry
// run) or a file that cannot be created keeps the output in the journal,
// with a note saying why. A supervised call's supervisor, which gets the
// lines, keeps the file itself (stepSpec.OutputFile).
func (x *execution) withOutputFile(st *workflows.Step, attempt int, spec procSpec) (procSpec, *outputFile) {
	if st.Output != workflows.OutputFile {
		return spec, nil
	}
	dir, ok := filesDir(x.e.journals)
	if !ok {
		x.j.write(Record{Type: RecordNote, Step: st.ID, Attempt: attempt, Text: "output: file is kept in the journal: this run keeps no files"})
		return spec, nil
	}
	o := startOutputFile(x.j.write, st.ID, attempt, outputFilePath(dir, x.id, st.ID, attempt))
	if o == nil {
		return spec, nil
	}
	return o.wrap(spec), o
}

// startOutputFile opens a step call's output file at path and records it
// with journal; when it cannot be created, it notes why the output stays
// in the journal and returns nil.
func startOutputFile(journal func(Record), step string, attempt int, path string) *outputFile {
	o := &outputFile{journal: journal, step: step, attempt: attempt, path: path}
	if err := o.open(); err != nil {
		journal(Record{Type: RecordNote, Step: step, Attempt: attempt, Text: "output: file is kept in the journal: " + err.Error()})
		return nil
	}
	journal(Record{Type: RecordOutputFile, Step: step, Attempt: attempt, Event: "started", File: path})
	return o
}

// wrap returns spec writing its lines to the file (a line may be as long
// as MaxOutputFileLine) instead of the journal.
func (o *outputFile) wrap(spec procSpec) procSpec {
	spec.lineCap = max(spec.lineCap, MaxOutputFileLine)
	spec.onLine = o.line
	return spec
}

func (o *outputFile) open() error {
	if err := os.MkdirAll(filepath.Dir(o.path), 0o700); err != nil {
		return fmt.Errorf("create run folder: %w", err)
	}
	f, err := os.OpenFile(o.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create output file: %w", err)
	}
	o.f, o.w = f, bufio.NewWriterSize(f, 64<<10)
	return nil
}

// line writes one line of output (cut at the line cap with dropped bytes
// left out), or counts it as dropped past the file's cap.
func (o *outputFile) line(_, line string, dropped int64) {
	if dropped > 0 {
		line += cutMarker(dropped)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := int64(len(line)) + 1
	if o.err != nil || o.written+n > MaxOutputFileBytes {
		o.dropped += n
		return
	}
	if _, err := o.w.WriteString(line + "\n"); err != nil {
		o.err = err
		return
	}
	o.written += n
	o.lines++
}

// close ends the file (saying how much was dropped past its cap), syncs it
// and records its size in the journal.
func (o *outputFile) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped > 0 && o.err == nil {
		_, o.err = fmt.Fprintf(o.w, "… [output file cut at %d bytes: %d bytes dropped]\n", MaxOutputFileBytes, o.dropped)
	}
	err := errors.Join(o.err, o.w.Flush(), o.f.Sync(), o.f.Close())
	rec := Record{Type: RecordOutputFile, Step: o.step, Attempt: o.attempt, Event: "finished", File: o.path, Lines: o.lines, Dropped: o.dropped,
		Text: fmt.Sprintf("%d lines, %d bytes", o.lines, o.written)}
	if err != nil {
		rec.Error = "write output file: " + err.Error()
	}
	o.journal(rec)
}

// removeRunFolder deletes run id's folder under dir (its output files)
// and returns the bytes it held.
func removeRunFolder(dir, id string) (int64, error) {
	if err := ids.Validate("run id", id); err != nil {
		return 0, err
	}
	p := runFolder(dir, id)
	var size int64
	err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err == nil {
		err = os.RemoveAll(p)
	}
	if err != nil {
		return 0, fmt.Errorf("remove output files of run %s: %w", id, err)
	}
	return size, nil
}

// markOutputFiles sets the output file of v's steps that keep one, from
// the definition the run was launched with.
func (e *Engine) markOutputFiles(v *Run) {
	dir, ok := filesDir(e.journals)
	if !ok || !bytes.Contains(v.Literals, []byte("output")) {
		return
	}
	wf, _, err := parseLiterals(v.Literals)
	if err != nil {
		return
	}
	for i := range v.Steps {
		s := &v.Steps[i]
		if st, ok := wf.Step(s.ID); ok && st.Output == workflows.OutputFile && s.Attempts > 0 {
			s.OutputFile = outputFilePath(dir, v.ID, s.ID, s.Attempts)
		}
	}
}
