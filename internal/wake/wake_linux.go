package wake

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// entriesMask: a file created, deleted, moved in or out, or the folder
// itself going away; with IN_MODIFY, a file written too (a WAL append, a
// journal line).
const entriesMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

type inotifyDir struct {
	f    *os.File
	once sync.Once
	err  error
}

func watchDir(dir string, writes bool, deliver func([]string), end func(error)) (dirImpl, error) {
	mask := uint32(entriesMask)
	if writes {
		mask |= unix.IN_MODIFY
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", dir, err)
	}
	// A non-blocking descriptor: os.File reads it through the runtime's
	// poller, and Close wakes the reader.
	w := &inotifyDir{f: os.NewFile(uintptr(fd), "inotify:"+dir)}
	go w.read(dir, deliver, end)
	return w, nil
}

func (w *inotifyDir) read(dir string, deliver func([]string), end func(error)) {
	buf := make([]byte, 64<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			end(fmt.Errorf("watch %s: %w", dir, err))
			return
		}
		var names []string
		gone := false
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			switch {
			case ev.Mask&unix.IN_Q_OVERFLOW != 0:
				names = nil
				deliver(nil)
				continue
			case ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
				gone = true
				continue
			}
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			names = append(names, string(name))
		}
		if len(names) > 0 {
			deliver(names)
		}
		if gone {
			w.close()
			end(fmt.Errorf("watch %s: the folder was removed or moved", dir))
			return
		}
	}
}

func (w *inotifyDir) close() error {
	w.once.Do(func() { w.err = w.f.Close() })
	return w.err
}

func watchExit(pid int) (*Exit, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return nil, fmt.Errorf("watch process %d: %w", pid, os.ErrProcessDone)
	}
	if err != nil {
		return nil, fmt.Errorf("watch process %d: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), fmt.Sprintf("pidfd:%d", pid))
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("watch process %d: %w", pid, err)
	}
	x := &Exit{done: make(chan struct{})}
	var once sync.Once
	x.stop = func() { once.Do(func() { f.Close() }) }
	go func() {
		defer close(x.done)
		// A pidfd is readable once the process has exited. The callback
		// checks readiness itself (the poller only reports edges after
		// the read is prepared); returning false waits for the next one.
		_ = rc.Read(func(fd uintptr) bool {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, 0)
			return err != nil || n > 0
		})
		x.stop()
	}()
	return x, nil
}
