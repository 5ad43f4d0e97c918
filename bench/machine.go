package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// machine describes where the figures were measured.
type machine struct {
	CPU      string
	Cores    int
	MemTotal string
	Kernel   string
	Go       string
	Date     time.Time
	Commit   string
	Disk     disk
	// LoadStart and LoadEnd are /proc/loadavg's first three fields when
	// the run began and ended: how busy the shared machine was.
	LoadStart, LoadEnd string
}

// disk is the filesystem holding the bench's databases.
type disk struct {
	Dir    string // the temporary folder every figure works in
	Mount  string
	FSType string
	Source string
	Why    string // why this folder was chosen
}

func (d disk) String() string {
	return fmt.Sprintf("%s (%s on %s, mounted at %s)", d.Dir, d.FSType, d.Source, d.Mount)
}

func describeMachine(repo string, d disk, loadStart string) machine {
	m := machine{
		LoadStart: loadStart,
		LoadEnd:   loadAverage(),
		Cores:     runtime.NumCPU(),
		Go:        runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		Date:      time.Now(),
		Disk:      d,
	}
	m.CPU = firstField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseFloat(strings.Fields(firstField("/proc/meminfo", "MemTotal") + " 0")[0], 64); err == nil && kb > 0 {
		m.MemTotal = fmt.Sprintf("%.1f GiB", kb/(1<<20))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
			m.Commit += " (with uncommitted changes)"
		}
	}
	return m
}

// loadAverage is the 1, 5 and 15 minute load averages, "" when unknown.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], ", ")
	}
	return ""
}

// firstField returns the value of the first "key : value" line of a /proc
// file whose key is key.
func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// mountOf finds the mount holding dir in /proc/self/mountinfo.
func mountOf(dir string) (mount, fstype, source string) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return "?", "?", "?"
	}
	want := fmt.Sprintf("%d:%d", (st.Dev>>8)&0xfff|(st.Dev>>32)&^0xfff, st.Dev&0xff|(st.Dev>>12)&^0xff)
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "?", "?", "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	best := ""
	for sc.Scan() {
		// id parent major:minor root mountpoint opts ... - fstype source superopts
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[2] != want {
			continue
		}
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(fields) {
			continue
		}
		mp := fields[4]
		if strings.HasPrefix(dir, mp) && len(mp) >= len(best) {
			best, mount, fstype, source = mp, mp, fields[sep+1], fields[sep+2]
		}
	}
	if mount == "" {
		return "?", "?", "?"
	}
	return mount, fstype, source
}

// chooseDir picks the folder every figure works in: under $TMPDIR (or
// /tmp) when that is a real disk on the same device as the working folder,
// else under the working folder itself, so that fsync means what it means
// for a real state root.
func chooseDir(explicit string) (disk, func(), error) {
	var base, why string
	switch {
	case explicit != "":
		base, why = explicit, "given with -dir"
	default:
		wd, err := os.Getwd()
		if err != nil {
			return disk{}, nil, err
		}
		tmp := os.TempDir()
		_, tmpFS, _ := mountOf(tmp)
		if sameDevice(tmp, wd) && tmpFS != "tmpfs" {
			base, why = tmp, fmt.Sprintf("%s is on the same disk as the working folder", tmp)
		} else {
			base, why = wd, fmt.Sprintf("%s is %s or on another device than the working folder, so the working folder is used", tmp, tmpFS)
		}
	}
	dir, err := os.MkdirTemp(base, "cairn-bench-")
	if err != nil {
		return disk{}, nil, fmt.Errorf("create bench folder under %s: %w", base, err)
	}
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return disk{}, nil, err
	}
	d := disk{Dir: dir, Why: why}
	d.Mount, d.FSType, d.Source = mountOf(dir)
	return d, func() { os.RemoveAll(dir) }, nil
}

func sameDevice(a, b string) bool {
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(b, &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev
}
