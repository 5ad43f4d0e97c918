package locks

import (
	"errors"
	"os"
	"strconv"
	"time"
)

// SelfStart is when this process started (zero when /proc cannot tell).
func SelfStart() time.Time { return self().startTime }

// Hostname is this machine's name as this process read it once ("" when
// unknown).
func Hostname() string { return self().host }

// ProcessGone reports whether the process pid of this machine (host, as
// Hostname says) that started at started has provably ended: its pid is
// free, or names a process that started at another time. A process of
// another host, or one that cannot be checked, is not gone.
func ProcessGone(host string, pid int, started time.Time) bool {
	me := self()
	if host == "" || host != me.host || pid <= 0 || started.IsZero() {
		return false
	}
	ticks, err := readStartTicks(strconv.Itoa(pid))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	boot, berr := readBootTime()
	if err != nil || berr != nil {
		return false
	}
	return !ticksToTime(boot, ticks).Truncate(time.Millisecond).Equal(started.Truncate(time.Millisecond))
}
