package store

import "context"

// LeaseForgetter is implemented by stores that can delete leases nobody
// holds. Leases mode takes a lease per run and per run's step (run:<id>,
// step:<id>); once the run settled they are never taken again, so the
// engine forgets them rather than keep two rows per run forever. A lease
// with a holder, current or expired, is never deleted: its epoch still
// fences writes.
type LeaseForgetter interface {
	// ForgetLeases deletes those of the named leases that were released
	// (no holder); unknown names are skipped. At most MaxListLimit names.
	ForgetLeases(ctx context.Context, names []string) error
}
