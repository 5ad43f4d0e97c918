package postgres

// Stubs for the half of store/postgres that branch pgrest implements
// (automations, fires, sessions, compaction, outbox, audit), so that
// *Store satisfies store.Store meanwhile. pgrest deletes each stub here as
// it implements it in its own files; nothing else edits this file.
//
// Two of them are hooks the runs side calls inside its own transactions:
// enqueueAllTx (ParkParams.Notify, SettleParams.Notify: outbox.go) and
// deleteFiresOfTx (DeleteRuns deletes the fire history rows of the runs
// it deletes: fire*.go). The runs side also offers pgrest, for Fire:
// s.write (tx.go), insertRunTx (runs.go) and checkFencesTx (leases.go).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnhq/cairn/store"
	"github.com/jackc/pgx/v5"
)

func notYet(what string) error {
	return fmt.Errorf("postgres store: %s: %w (not implemented yet)", what, errors.ErrUnsupported)
}

// enqueueAllTx enqueues notes in tx, at now (see store.PrepareNotification).
func (s *Store) enqueueAllTx(ctx context.Context, tx pgx.Tx, notes []*store.Notification, now time.Time) error {
	if len(notes) == 0 {
		return nil
	}
	return notYet("enqueue notifications")
}

// deleteFiresOfTx deletes the fire history rows that name the runs ids.
// Until fires are stored (Fire is a stub), there are none to delete.
func (s *Store) deleteFiresOfTx(ctx context.Context, tx pgx.Tx, ids []string) error { return nil }

func (s *Store) CreateAutomation(ctx context.Context, a *store.Automation) error {
	return notYet("create automation")
}

func (s *Store) GetAutomation(ctx context.Context, id string) (*store.Automation, error) {
	return nil, notYet("get automation")
}

func (s *Store) ListAutomations(ctx context.Context, f store.AutomationFilter) ([]*store.Automation, error) {
	return nil, notYet("list automations")
}

func (s *Store) UpdateAutomation(ctx context.Context, a *store.Automation, expected int64) error {
	return notYet("update automation")
}

func (s *Store) DeleteAutomation(ctx context.Context, id string, expected int64) error {
	return notYet("delete automation")
}

func (s *Store) Fire(ctx context.Context, p store.FireParams) (store.FireResult, error) {
	return store.FireResult{}, notYet("fire")
}

func (s *Store) FireMany(ctx context.Context, ps []store.FireParams) ([]store.FireOutcome, error) {
	return nil, notYet("fire many")
}

func (s *Store) RecordAutomation(ctx context.Context, p store.RecordParams) (*store.Automation, error) {
	return nil, notYet("record automation")
}

func (s *Store) ListFires(ctx context.Context, automationID string, limit int) ([]*store.AutomationFire, error) {
	return nil, notYet("list fires")
}

func (s *Store) AutomationsVersion(ctx context.Context) (int64, error) {
	return 0, notYet("automations version")
}

func (s *Store) CreateSession(ctx context.Context, sess *store.Session) (bool, error) {
	return false, notYet("create session")
}

func (s *Store) GetSession(ctx context.Context, id string) (*store.Session, error) {
	return nil, notYet("get session")
}

func (s *Store) ListSessions(ctx context.Context, p store.ListSessionsParams) ([]*store.Session, store.SessionCursor, error) {
	return nil, store.SessionCursor{}, notYet("list sessions")
}

func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return notYet("delete session")
}

func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs []*store.Message) (*store.Session, error) {
	return nil, notYet("append messages")
}

func (s *Store) ListMessages(ctx context.Context, p store.ListMessagesParams) ([]*store.Message, error) {
	return nil, notYet("list messages")
}

func (s *Store) PrepareCompaction(ctx context.Context, p store.PrepareCompactionParams) (*store.CompactionResult, error) {
	return nil, notYet("prepare compaction")
}

func (s *Store) CommitCompaction(ctx context.Context, p store.CommitCompactionParams) (*store.CompactionResult, error) {
	return nil, notYet("commit compaction")
}

func (s *Store) FailCompaction(ctx context.Context, p store.FailCompactionParams) (*store.CompactionResult, error) {
	return nil, notYet("fail compaction")
}

func (s *Store) ListArchives(ctx context.Context, sessionID string) ([]*store.Archive, error) {
	return nil, notYet("list archives")
}

func (s *Store) GetArchive(ctx context.Context, id string) (*store.Archive, error) {
	return nil, notYet("get archive")
}

func (s *Store) EnqueueNotification(ctx context.Context, n *store.Notification) (bool, error) {
	return false, notYet("enqueue notification")
}

func (s *Store) ClaimNotifications(ctx context.Context, p store.ClaimNotificationsParams) ([]*store.Notification, error) {
	return nil, notYet("claim notifications")
}

func (s *Store) RecordNotification(ctx context.Context, o store.NotificationOutcome) error {
	return notYet("record notification")
}

func (s *Store) NextNotification(ctx context.Context) (time.Time, bool, error) {
	return time.Time{}, false, notYet("next notification")
}

func (s *Store) Notifications(ctx context.Context, limit int) ([]*store.Notification, error) {
	return nil, notYet("list notifications")
}

func (s *Store) AppendAudit(ctx context.Context, e *store.AuditEntry) error {
	return notYet("append audit")
}

func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]*store.AuditEntry, error) {
	return nil, notYet("list audit")
}

func (s *Store) DeleteAuditBefore(ctx context.Context, before time.Time, limit int) (int64, error) {
	return 0, notYet("delete audit")
}
