package locks

import "time"

// SelfStart is when this process started (zero when /proc cannot tell).
func SelfStart() time.Time { return self().startTime }

// Hostname is this machine's name as this process read it once ("" when
// unknown).
func Hostname() string { return self().host }
