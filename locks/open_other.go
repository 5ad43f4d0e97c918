//go:build !unix

package locks

// openNoFollow is not available here; lock paths are checked for being
// regular files after opening instead.
const openNoFollow = 0
