// Package tmpfs mounts a small tmpfs for tests of a full disk. Mounting
// needs root (CI runs the fault tests as root); elsewhere the test is
// skipped with a message.
package tmpfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size (tmpfs syntax: "2m") on a new folder and
// unmounts it when the test ends; it skips the test when it cannot.
func Mount(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs to fill the disk needs root (CI runs this as root)")
	}
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes the file p until its disk is full and returns how many
// bytes it wrote. Removing p frees them.
func Fill(t testing.TB, p string) int64 {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	var n int64
	for {
		k, err := f.Write(buf)
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, io.ErrShortWrite) {
			return n
		}
		if err != nil {
			t.Fatalf("fill %s: %v", p, err)
		}
	}
}
