package store

// Sharer is implemented by a store that can say whether processes on
// other machines may use it too (a database server, not a file of this
// machine). Peers of a shared store cannot coordinate with lock files,
// which do not cross machines: they coordinate with leases in the store.
type Sharer interface {
	Shared() bool
}

// IsShared reports whether st says it is shared by several machines; a
// store that does not say is not.
func IsShared(st any) bool {
	s, ok := st.(Sharer)
	return ok && s.Shared()
}
