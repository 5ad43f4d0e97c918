package locks

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestHolderCurrent(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("start times come from /proc")
	}
	dir := t.TempDir()
	l, err := TryLock(dir, "worker")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	h, held, err := Describe(dir, "worker")
	if err != nil || !held || h.PID != os.Getpid() {
		t.Fatalf("describe: %+v %v %v", h, held, err)
	}
	if !h.Current() {
		t.Fatalf("this process's own record is not current: %+v", h)
	}
	other := h
	other.StartTime = h.StartTime.Add(-time.Hour) // a reused pid
	if other.Current() {
		t.Fatal("a record with another start time is current")
	}
	other = h
	other.BootID = "an-earlier-boot"
	if other.Current() {
		t.Fatal("a record from another boot is current")
	}
	if (Holder{}).Current() {
		t.Fatal("the zero holder is current")
	}
}
