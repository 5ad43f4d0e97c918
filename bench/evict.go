package main

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// evict drops the pages of the files at paths from the page cache
// (posix_fadvise POSIX_FADV_DONTNEED after an fdatasync, since only clean
// pages can be dropped), so that the next reader reads them from the disk.
// A missing file is skipped. It returns how many of their pages are still
// resident afterwards (mincore), so the report can show the eviction
// worked.
func evict(paths ...string) (resident, total int, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("evict %s: %w", p, err)
		}
		err = unix.Fdatasync(int(f.Fd()))
		if err == nil {
			err = unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		}
		var r, n int
		if err == nil {
			r, n, err = residentPages(f)
		}
		f.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("evict %s: %w", p, err)
		}
		resident, total = resident+r, total+n
	}
	return resident, total, nil
}

// residentPages counts f's pages in the page cache with mincore.
func residentPages(f *os.File) (resident, total int, err error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return 0, 0, fmt.Errorf("mincore: %w", e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec), nil
}
