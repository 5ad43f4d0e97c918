package postgres

// Shared says the store may be used by processes on other machines
// (store.Sharer, on branch pgcoord): their peers coordinate with leases in
// the store, not lock files.
func (s *Store) Shared() bool { return true }
