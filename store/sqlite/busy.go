package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A writer that finds the write lock taken waits up to Options.WriteWait
// (store.busy_timeout), saying in the log whom it waits for. It polls:
// SQLite's own busy wait backs off to 100 ms between tries, so a writer
// committing slice after slice would starve it; a short busy wait
// (writeBusySlice) and a retry every few milliseconds catch the gap
// between two slices (see sliceGap).
const (
	DefaultWriteWait = 2 * time.Minute
	writeBusySlice   = 5 * time.Millisecond
	busyLogFirst     = 2 * time.Second
	busyLogEvery     = 10 * time.Second
)

// begin starts the write transaction (BEGIN IMMEDIATE). SQLite's busy wait
// is not fair: a process writing in a tight loop can starve a sleeping
// waiter. A busy BEGIN has done nothing, so it is safe to try again, for
// up to WriteWait.
func (s *Store) begin(ctx context.Context) (*sql.Tx, error) {
	start := time.Now()
	nextLog := start.Add(busyLogFirst)
	for {
		tx, err := s.w.BeginTx(ctx, nil)
		if err == nil || !isBusy(err) {
			return tx, err
		}
		now := time.Now()
		waited := now.Sub(start).Round(time.Second)
		if now.Sub(start) >= s.opts.WriteWait {
			return nil, fmt.Errorf("waited %s for %s's write to %s (store.busy_timeout): %w", waited, s.writeHolder(), s.path, err)
		}
		if now.After(nextLog) {
			s.log.Warn(fmt.Sprintf("waiting for %s's write for %s", s.writeHolder(), waited), "db", s.path, "limit", s.opts.WriteWait)
			nextLog = now.Add(busyLogEvery)
		}
		time.Sleep(time.Duration(1+rand.IntN(5)) * time.Millisecond)
	}
}

// isBusy reports SQLITE_BUSY or SQLITE_LOCKED (primary result codes 5, 6).
func isBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// walWriteLock is the byte of the -shm file that SQLite locks for the
// writer of a WAL database (WALINDEX_LOCK_OFFSET + WAL_WRITE_LOCK).
const walWriteLock = 120

// writeHolder names the process holding the write lock: "pid N" from
// /proc/locks on Linux, else "another process". It reads a kernel table
// and never opens the database's files, whose POSIX locks a close would
// drop.
func (s *Store) writeHolder() string {
	if pid := shmLockHolder(s.path+"-shm", os.Getpid()); pid > 0 {
		return "pid " + strconv.Itoa(pid)
	}
	return "another process"
}

// shmLockHolder returns the pid of a POSIX write lock on the write-lock
// byte of shm, other than self's, or 0.
func shmLockHolder(shm string, self int) int {
	fi, err := os.Stat(shm)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	ino := strconv.FormatUint(st.Ino, 10)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: POSIX  ADVISORY  WRITE 4242 fd:01:123456 120 120"; waiters
		// have "->" after the number.
		f := strings.Fields(sc.Text())
		if len(f) != 8 || f[1] != "POSIX" || f[3] != "WRITE" {
			continue
		}
		if dev := strings.Split(f[5], ":"); len(dev) != 3 || dev[2] != ino {
			continue
		}
		lo, err1 := strconv.ParseInt(f[6], 10, 64)
		hi, err2 := strconv.ParseInt(f[7], 10, 64)
		if f[7] == "EOF" {
			hi, err2 = 1<<62, nil
		}
		pid, err3 := strconv.Atoi(f[4])
		if err1 != nil || err2 != nil || err3 != nil || lo > walWriteLock || hi < walWriteLock || pid == self {
			continue
		}
		return pid
	}
	return 0
}
