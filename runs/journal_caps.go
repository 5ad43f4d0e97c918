package runs

import (
	"fmt"
	"unicode/utf8"
)

// Default journal caps (Options.JournalRunCap, Options.JournalLineCap).
const (
	DefaultJournalRunCap  = 16 << 20
	DefaultJournalLineCap = 64 << 10
	// maxJournalTail bounds the tail of text kept in memory once a run's
	// journal reached its cap; a quarter of a smaller cap.
	maxJournalTail = 1 << 20
	// The least caps New accepts: a run keeps a few lines, a line a few
	// words.
	MinJournalRunCap  = 4 << 10
	MinJournalLineCap = 64
	// MaxJournalLineCap is the largest line cap: a line is held in memory
	// whole.
	MaxJournalLineCap = 16 << 20
)

// journalTail keeps the latest text records of a run whose journal is
// over its head budget, up to max bytes, counting what it lets go.
type journalTail struct {
	max          int
	recs         [][]byte // encoded records, oldest first from head
	texts        []int    // text bytes of each record
	head         int
	size         int   // bytes of recs[head:]
	droppedBytes int64 // text bytes let go
	droppedLines int64
}

// push keeps rec (textLen bytes of output) and lets the oldest records go
// while over max.
func (t *journalTail) push(rec []byte, textLen int) {
	t.recs = append(t.recs, rec)
	t.texts = append(t.texts, textLen)
	t.size += len(rec)
	for t.size > t.max && t.head < len(t.recs) {
		t.size -= len(t.recs[t.head])
		t.droppedBytes += int64(t.texts[t.head])
		t.droppedLines++
		t.recs[t.head] = nil
		t.head++
	}
	if t.head > 1024 && t.head > len(t.recs)/2 {
		n := copy(t.recs, t.recs[t.head:])
		copy(t.texts, t.texts[t.head:])
		clear(t.recs[n:])
		t.recs, t.texts, t.head = t.recs[:n], t.texts[:n], 0
	}
}

func (t *journalTail) empty() bool { return t.head == len(t.recs) && t.droppedLines == 0 }

// take returns the kept records and what was dropped, and empties t.
func (t *journalTail) take() (recs [][]byte, droppedBytes, droppedLines int64) {
	recs, droppedBytes, droppedLines = t.recs[t.head:], t.droppedBytes, t.droppedLines
	*t = journalTail{max: t.max}
	return recs, droppedBytes, droppedLines
}

// truncatedRecord says how much output of a run over its journal cap was
// dropped before the kept tail.
func truncatedRecord(step string, runCap int64, droppedBytes, droppedLines int64, kept int) Record {
	return Record{
		Type:    RecordTruncated,
		Step:    step,
		Dropped: droppedBytes,
		Lines:   droppedLines,
		Text: fmt.Sprintf("the journal reached its cap of %d bytes: %d bytes of output in %d lines dropped; the last %d lines follow",
			runCap, droppedBytes, droppedLines, kept),
	}
}

// cutLine cuts line to at most lineCap bytes, at a rune boundary, and
// returns what it kept with the number of bytes dropped (more is the
// number already dropped by the caller).
func cutLine(line []byte, lineCap int, more int64) ([]byte, int64) {
	if len(line) > lineCap {
		more += int64(len(line) - lineCap)
		line = line[:lineCap]
	}
	if more == 0 {
		return line, 0
	}
	// Do not keep half a character.
	for i := len(line) - 1; i >= 0 && i >= len(line)-utf8.UTFMax; i-- {
		if utf8.RuneStart(line[i]) {
			if !utf8.FullRune(line[i:]) {
				more += int64(len(line) - i)
				line = line[:i]
			}
			break
		}
	}
	return line, more
}

// cutMarker ends the text of a line cut at the line cap.
func cutMarker(dropped int64) string {
	return fmt.Sprintf(" … [line cut: %d bytes dropped]", dropped)
}
