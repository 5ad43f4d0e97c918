package runs

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// redacted replaces a secret's value wherever a run would record it.
const redacted = "***"

// redactor holds the secret values an execution resolved, and replaces
// them in everything the run records: journal lines, step results and
// errors, the run's error and result. It is safe for concurrent use (a
// step's output lines arrive from their own goroutines).
type redactor struct {
	mu   sync.RWMutex
	vals []string // longest first, so a value that holds another goes whole
	json [][]byte // each value as it appears inside a JSON string
}

// newRedactor returns a redactor of vals: a step supervisor builds one
// from the values its spec carries (execution.redactValues).
func newRedactor(vals []string) *redactor {
	r := &redactor{}
	r.add(vals...)
	return r
}

// add adds values to redact from now on, as they are and as error texts
// quote them (%q).
func (r *redactor) add(vals ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vals {
		if v == "" {
			continue
		}
		q := strconv.Quote(v)
		for _, form := range []string{v, q[1 : len(q)-1]} {
			if !slices.Contains(r.vals, form) {
				r.vals = append(r.vals, form)
			}
		}
	}
	slices.SortFunc(r.vals, func(a, b string) int { return len(b) - len(a) })
	r.json = r.json[:0]
	for _, v := range r.vals {
		q, _ := json.Marshal(v)
		r.json = append(r.json, q[1:len(q)-1])
	}
}

// values returns the values redacted (for a step supervisor that writes
// journal lines itself).
func (r *redactor) values() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.vals)
}

// str returns s with every value replaced.
func (r *redactor) str(s string) string {
	if r == nil || s == "" {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.vals {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, redacted)
		}
	}
	return s
}

// raw returns JSON text with every value replaced inside its strings.
func (r *redactor) raw(b json.RawMessage) json.RawMessage {
	if r == nil || len(b) == 0 {
		return b
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.json {
		if bytes.Contains(b, v) {
			b = bytes.ReplaceAll(b, v, []byte(redacted))
		}
	}
	return b
}

// record redacts the text fields of a journal record.
func (r *redactor) record(rec Record) Record {
	if r == nil {
		return rec
	}
	rec.Text, rec.Error, rec.Result = r.str(rec.Text), r.str(rec.Error), r.raw(rec.Result)
	return rec
}

// stepRecord redacts a step's recorded output.
func (r *redactor) stepRecord(rec stepRecord) stepRecord {
	rec.Stdout, rec.Stderr, rec.Body = r.str(rec.Stdout), r.str(rec.Stderr), r.str(rec.Body)
	return rec
}
