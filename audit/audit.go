// Package audit records what agents do: principal, time, tool, a digest
// of the arguments (never the arguments themselves, which may hold
// secrets) and the outcome, in the store's audit trail, which retention
// deletes by age with the runs.
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/internal/clock"
	"github.com/cairnhq/cairn/store"
)

// Log appends audit entries. A nil *Log records nothing. It is safe for
// concurrent use.
type Log struct {
	Store store.AuditStore
	Clock clock.Clock  // nil: the wall clock
	Log   *slog.Logger // nil: discard
}

// Entry is one action to record.
type Entry struct {
	Principal  access.Principal
	Connection string
	Tool       string
	// Args are the call's arguments (JSON); only their digest is kept.
	Args    json.RawMessage
	Outcome string // store.AuditOK, AuditRefused, AuditError
	Subject string
}

// Record appends e. The action it records already happened, so a failure
// to record it is logged, not returned.
func (l *Log) Record(ctx context.Context, e Entry) {
	if l == nil || l.Store == nil {
		return
	}
	se := &store.AuditEntry{
		At: clock.OrReal(l.Clock).Now(), Principal: string(e.Principal), Connection: e.Connection,
		Tool: e.Tool, ArgsDigest: Digest(e.Args), Outcome: e.Outcome, Subject: e.Subject,
	}
	if err := l.Store.AppendAudit(context.WithoutCancel(ctx), se); err != nil && l.Log != nil {
		l.Log.Warn("audit: record entry", "tool", e.Tool, "principal", e.Principal, "err", err)
	}
}

// Digest is "sha256:<hex>" of args in canonical form (object keys sorted,
// no insignificant space, numbers as written), so two calls with the same
// arguments have the same digest however the client spelt them. Arguments
// that are not JSON are digested as they are.
func Digest(args json.RawMessage) string {
	b := canonical(args)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func canonical(args json.RawMessage) []byte {
	if len(bytes.TrimSpace(args)) == 0 {
		return []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return args
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return args
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
