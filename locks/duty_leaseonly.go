package locks

// tryLockFile takes the duty's lock file, or, for a lease-only duty,
// nothing: a nil Lock and no error, so the lease alone decides.
func (d *Duty) tryLockFile() (*Lock, error) {
	if d.cfg.LeaseOnly {
		return nil, nil
	}
	return TryLock(d.cfg.Dir, d.cfg.Name)
}
