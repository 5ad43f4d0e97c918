package store

import (
	"context"
	"time"
)

// MaxAuditPage bounds how many entries one ListAudit returns.
const MaxAuditPage = 500

// Audit outcomes.
const (
	AuditOK      = "ok"      // the action was done
	AuditRefused = "refused" // policy or ownership refused it
	AuditError   = "error"   // it failed for another reason
)

// AuditEntry is one action of an agent: who, when, which tool, a digest
// of the arguments (never the arguments: they may hold secrets) and what
// came of it.
type AuditEntry struct {
	// Seq orders entries; it is the listing cursor.
	Seq        int64     `json:"seq"`
	At         time.Time `json:"at"`
	Principal  string    `json:"principal"`
	Connection string    `json:"connection,omitempty"`
	Tool       string    `json:"tool"`
	ArgsDigest string    `json:"args_digest"`
	Outcome    string    `json:"outcome"`
	// Subject is the record acted on (a run or automation id), or for a
	// refusal the policy key that refused it.
	Subject string `json:"subject,omitempty"`
}

// AuditFilter selects audit entries: those at or after Since with a Seq
// after After, oldest first, at most Limit (0 or more than MaxAuditPage:
// MaxAuditPage).
type AuditFilter struct {
	Since time.Time
	After int64
	Limit int
}

// AuditStore keeps the audit trail. Methods are safe for concurrent use.
type AuditStore interface {
	// AppendAudit stores e, setting its Seq (and At when zero).
	AppendAudit(ctx context.Context, e *AuditEntry) error
	// ListAudit returns the entries f selects, by Seq.
	ListAudit(ctx context.Context, f AuditFilter) ([]*AuditEntry, error)
	// DeleteAuditBefore deletes at most limit entries older than before
	// and returns how many it deleted.
	DeleteAuditBefore(ctx context.Context, before time.Time, limit int) (int64, error)
}

// AuditLimit is f's page size.
func (f AuditFilter) AuditLimit() int {
	if f.Limit <= 0 || f.Limit > MaxAuditPage {
		return MaxAuditPage
	}
	return f.Limit
}
