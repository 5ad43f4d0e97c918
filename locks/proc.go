package locks

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicksPerSecond is USER_HZ, the unit of /proc/<pid>/stat start times.
// It is 100 on every Linux architecture Go supports.
const clockTicksPerSecond = 100

// process identifies a process well enough to tell it from a later process
// that reused its pid. Fields that cannot be read (no /proc) stay zero.
type process struct {
	pid        int
	startTicks uint64    // clock ticks after boot, from /proc/<pid>/stat
	startTime  time.Time // startTicks as a wall time
	bootID     string
	host       string
}

// self is this process, read once.
var self = sync.OnceValue(func() process {
	p := process{pid: os.Getpid()}
	if host, err := os.Hostname(); err == nil {
		p.host = host
	}
	p.bootID = readBootID()
	if ticks, err := readStartTicks("self"); err == nil {
		p.startTicks = ticks
		if boot, err := readBootTime(); err == nil {
			p.startTime = ticksToTime(boot, ticks)
		}
	}
	return p
})

// readBootID returns the kernel's id for the current boot, or "".
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readStartTicks returns the start time of process pid ("self" or a number)
// in clock ticks after boot.
func readStartTicks(pid string) (uint64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStartTicks(b)
}

// parseStartTicks extracts field 22 (starttime) from a /proc/<pid>/stat
// line. Field 2 is the command name in parentheses and may itself contain
// spaces and parentheses, so fields are counted from the last ')'.
func parseStartTicks(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("parse process stat: no command name")
	}
	// After ')' come fields 3, 4, ...: starttime (22) is the 20th.
	fields := strings.Fields(string(stat[i+1:]))
	const startField = 22 - 3
	if len(fields) <= startField {
		return 0, fmt.Errorf("parse process stat: %d fields after command name, want more than %d", len(fields), startField)
	}
	ticks, err := strconv.ParseUint(fields[startField], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse process stat: start time: %w", err)
	}
	return ticks, nil
}

// readBootTime returns the boot time from the btime line of /proc/stat.
func readBootTime() (time.Time, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	return parseBootTime(f)
}

func parseBootTime(r io.Reader) (time.Time, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "btime ")
		if !ok {
			continue
		}
		secs, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("parse boot time: %w", err)
		}
		return time.Unix(secs, 0).UTC(), nil
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, fmt.Errorf("read boot time: %w", err)
	}
	return time.Time{}, errors.New("read boot time: no btime line")
}

func ticksToTime(boot time.Time, ticks uint64) time.Time {
	secs := ticks / clockTicksPerSecond
	frac := ticks % clockTicksPerSecond
	return boot.Add(time.Duration(secs)*time.Second + time.Duration(frac)*(time.Second/clockTicksPerSecond))
}

// gone reports whether the recorded process r has provably ended: it ran on
// an earlier boot, or on this host and boot its pid is free or now names a
// process that started at another time. Whatever cannot be checked counts as
// not gone.
func (r record) gone() bool {
	me := self()
	if r.BootID != "" && me.bootID != "" && r.BootID != me.bootID {
		return true
	}
	if r.Host != me.host || r.BootID == "" || r.BootID != me.bootID || r.StartTicks == 0 || me.startTicks == 0 {
		return false
	}
	ticks, err := readStartTicks(strconv.Itoa(r.PID))
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err != nil:
		return false
	}
	return ticks != r.StartTicks
}

// Stopped reports whether process pid is stopped by a signal (SIGSTOP,
// Ctrl-Z's SIGTSTP) or a tracer: alive, but making no progress. It is
// false when it cannot tell (no /proc).
func Stopped(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	state, err := parseState(b)
	return err == nil && (state == 'T' || state == 't')
}

// parseState extracts field 3 (the state letter) from a /proc/<pid>/stat
// line, counting from the last ')' as parseStartTicks does.
func parseState(stat []byte) (byte, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0, errors.New("parse process stat: no state")
	}
	return stat[i+2], nil
}
