package locks

import (
	"strconv"
	"time"
)

// Current reports whether h.PID still names the process that wrote h:
// the pid runs, on this host and boot, and started at h.StartTime. It is
// false when that cannot be told (no /proc, no start time recorded), so
// that a caller about to signal the pid never signals a stranger.
func (h Holder) Current() bool {
	me := self()
	if h.PID <= 0 || h.StartTime.IsZero() || h.Host != me.host || h.BootID == "" || h.BootID != me.bootID {
		return false
	}
	ticks, err := readStartTicks(strconv.Itoa(h.PID))
	if err != nil {
		return false
	}
	boot, err := readBootTime()
	if err != nil {
		return false
	}
	d := ticksToTime(boot, ticks).Sub(h.StartTime)
	return d > -time.Second && d < time.Second // the record keeps whole seconds at worst
}
