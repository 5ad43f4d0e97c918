package runs

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/text"

	"github.com/cairnhq/cairn/store"
)

// Record types in a journal.
const (
	RecordStart    = "start"    // first: run id, target, owner pid
	RecordText     = "text"     // a line of a step's output (stream stdout or stderr)
	RecordStep     = "step"     // step lifecycle: event started, finished, skipped, retrying, interrupted
	RecordNote     = "note"     // engine notes: resumed by, released by, ...
	RecordQuestion = "question" // the run parked on a question
	RecordAnswer   = "answer"   // the question was answered
	RecordEnd      = "end"      // last: terminal status and result or error
	// RecordTruncated: the journal reached its cap; Dropped bytes of output
	// in Lines lines were left out, and the tail that was kept follows.
	RecordTruncated = "truncated"
)

// Record is one line of a run's journal.
type Record struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Run     string    `json:"run,omitempty"`
	Target  string    `json:"target,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Step    string    `json:"step,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Event   string    `json:"event,omitempty"`
	Stream  string    `json:"stream,omitempty"`
	Text    string    `json:"text,omitempty"`
	// Dropped counts bytes of output left out: of this line (a text
	// record cut at the line cap) or of the lines before the tail (a
	// truncated record, with their number in Lines).
	Dropped  int64           `json:"dropped,omitempty"`
	Lines    int64           `json:"lines,omitempty"`
	Status   string          `json:"status,omitempty"`
	ExitCode *int            `json:"exit_code,omitempty"`
	Question *store.Question `json:"question,omitempty"`
	// By is who answered (an answer record): "human" or "agent:<client>".
	By     string          `json:"by,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	// File is the output file of a step with output: file (RecordOutputFile).
	File string `json:"file,omitempty"`
}

// maxEndResult bounds the result an end record carries: a larger one is
// left out.
const maxEndResult = 256 << 10

// journalWriter writes one execution's records. add buffers a record;
// flush writes what is buffered with one write(2), opening (creating) the
// journal at the first flush and keeping it open until close. An
// execution flushes before anything that takes time (a process, a
// request, a wait), so followers see records as they happen, while a run
// that only evaluates conditions writes its journal once. A failed open
// or write is logged once and execution goes on: output is history, not
// state.
//
// Text records count against the run's journal cap: past its head budget
// (the cap less the tail) they go to a bounded tail in memory instead,
// which the next other record (a step's end, a note, the end) writes
// after a truncated record. Other records are always written.
type journalWriter struct {
	e      *Engine
	runID  string
	mu     sync.Mutex
	f      journalFile // nil until the first flush
	buf    []byte
	failed bool // the journal could not be opened: records are dropped
	closed bool
	warned bool
	// noFile says that the run has no journal file: its journal may be
	// kept with the run when it settles (see inline).
	noFile bool
	// redact, when set, replaces secret values in every record added.
	redact *redactor

	written  int64 // bytes of the journal, buffered ones included, once sized
	sized    bool  // written counts what the journal held before this writer
	over     bool  // the head budget is spent: text goes to tail
	lastStep string
	tail     journalTail
}

func (e *Engine) openJournal(runID string) *journalWriter {
	return &journalWriter{e: e, runID: runID, tail: journalTail{max: e.journalTail()}}
}

// journalTail is how many bytes of the latest text a run over its cap
// keeps.
func (e *Engine) journalTail() int {
	return min(maxJournalTail, int(e.opts.JournalRunCap/4))
}

// add buffers a record for the next flush.
func (w *journalWriter) add(r Record) {
	if w == nil {
		return
	}
	r = w.redact.record(r)
	w.mu.Lock()
	if !w.closed && !w.failed {
		if r.Type == RecordText {
			w.addText(r)
		} else {
			w.addTail()
			w.append(appendRecord(nil, w.e.now(), r))
		}
	}
	w.mu.Unlock()
}

// append buffers an encoded record. The caller holds w.mu.
func (w *journalWriter) append(rec []byte) {
	w.buf = append(w.buf, rec...)
	w.written += int64(len(rec))
}

// addText buffers a text record within the head budget, or keeps it in
// the tail. The caller holds w.mu.
func (w *journalWriter) addText(r Record) {
	if !w.sized {
		// A resumed run's journal already holds output.
		if n, err := w.e.journals.size(w.runID); err == nil {
			w.written += n
		}
		w.sized = true
	}
	rec := appendRecord(nil, w.e.now(), r)
	w.lastStep = r.Step
	head := w.e.opts.JournalRunCap - int64(w.tail.max)
	if !w.over && w.written+int64(len(rec)) <= head {
		w.append(rec)
		return
	}
	w.over = true
	w.tail.push(rec, len(r.Text))
}

// addTail buffers what the tail holds, after a truncated record when some
// output was dropped. The caller holds w.mu.
func (w *journalWriter) addTail() {
	if w.tail.empty() {
		return
	}
	recs, dropped, lines := w.tail.take()
	if lines > 0 {
		w.append(appendRecord(nil, w.e.now(), truncatedRecord(w.lastStep, w.e.opts.JournalRunCap, dropped, lines, len(recs))))
	}
	for _, rec := range recs {
		w.append(rec)
	}
}

// write adds a record and flushes.
func (w *journalWriter) write(r Record) {
	w.add(r)
	w.flush()
}

// flush writes the buffered records.
func (w *journalWriter) flush() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if len(w.buf) == 0 {
		w.mu.Unlock()
		return
	}
	if w.f == nil {
		f, err := w.e.journals.open(w.runID)
		if err != nil {
			w.warn("open run journal", err)
			w.failed = true
			w.buf = nil
			w.mu.Unlock()
			return
		}
		w.f = f
	}
	if err := w.f.write(w.buf); err != nil {
		w.warn("write run journal", err)
	}
	if cap(w.buf) > 64<<10 {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	w.mu.Unlock()
	w.e.changed(w.runID)
}

// sync waits until what was flushed is readable by every reader, on
// every host: before the run's state moves on (a supervisor takes over,
// the run settles).
func (w *journalWriter) sync() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		if err := w.f.sync(); err != nil {
			w.warn("write run journal", err)
		}
	}
}

// warn logs a journal error, once per writer. The caller holds w.mu.
func (w *journalWriter) warn(what string, err error) {
	if !w.warned {
		w.warned = true
		w.e.log.Warn(what, "run", w.runID, "err", err)
	}
}

// inline returns the journal with the record end appended, to keep with
// the run as it settles, when the run has no journal file and nothing was
// flushed: ok is false otherwise. After a settle that stored it, call
// stored.
func (w *journalWriter) inline(end Record) (journal []byte, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.noFile || !w.e.inlineJournals || w.f != nil || w.failed || w.closed || !w.tail.empty() {
		return nil, false
	}
	return appendRecord(bytes.Clone(w.buf), w.e.now(), end), true
}

// stored says that the journal inline returned is kept with the run: the
// writer is done.
func (w *journalWriter) stored() {
	w.mu.Lock()
	w.buf, w.closed = nil, true
	w.mu.Unlock()
	w.e.changed(w.runID)
}

// close flushes and closes the journal.
func (w *journalWriter) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if !w.closed && !w.failed {
		w.addTail()
	}
	w.mu.Unlock()
	w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.f != nil {
		if err := w.f.close(); err != nil {
			w.warn("close run journal", err)
		}
		w.f = nil
	}
}

// appendRecord writes one record to a run's journal from outside its
// execution (an answer, a cancel of a parked run).
func (e *Engine) appendRecord(runID string, r Record) {
	w := e.openJournal(runID)
	w.add(r)
	w.close()
}

// appendRecord appends r, encoded as one JSON line, to b.
func appendRecord(b []byte, now time.Time, r Record) []byte {
	if r.Time.IsZero() {
		r.Time = now.UTC()
	}
	if len(r.Result) > maxEndResult {
		r.Result = nil
		r.Text = "the result is too large for the journal; read it from the run"
	}
	line, err := json.Marshal(r)
	if err != nil {
		line, _ = json.Marshal(Record{Time: r.Time, Type: RecordNote, Text: "unencodable record: " + err.Error()})
	}
	return append(append(b, line...), '\n')
}

// readRecords reads complete records from rd, at most limit, and returns
// them with the number of bytes they took. An incomplete last line is left
// for a later read.
func readRecords(rd io.Reader, limit int) ([]Record, int64, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	var (
		out      []Record
		consumed int64
	)
	for len(out) < limit {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, consumed, nil // partial or nothing: keep it for later
		}
		if err != nil {
			return out, consumed, err
		}
		consumed += int64(len(line))
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(body, &r); err != nil {
			r = Record{Type: RecordNote, Text: "unreadable journal line: " + text.Shorten(string(body), 200)}
		}
		out = append(out, r)
	}
	return out, consumed, nil
}

// parseCursor turns a journal cursor (a byte offset) back into a number.
func parseCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(c, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("read run output: invalid cursor %q (use the cursor a previous read returned, or none)", text.Shorten(c, 40))
	}
	return n, nil
}
