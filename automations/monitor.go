package automations

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// Monitor limits.
const (
	// MaxMonitorFiles bounds the files one files monitor digests.
	MaxMonitorFiles = 10000
	// MaxHTTPBody bounds the body an http monitor hashes.
	MaxHTTPBody = 8 << 20
	// HTTPTimeout bounds one http poll.
	HTTPTimeout = 10 * time.Second
)

// ErrTooManyFiles is wrapped when a glob matches more than MaxMonitorFiles.
var ErrTooManyFiles = errors.New("glob matches too many files")

// digester computes monitor observations. It remembers file hashes by
// (path, size, modification time), so unchanged files are not read again.
type digester struct {
	root     string
	client   *http.Client
	maxFiles int

	mu    sync.Mutex
	cache map[string]fileSum
}

type fileSum struct {
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
}

func newDigester(root string, client *http.Client) *digester {
	if client == nil {
		client = &http.Client{Timeout: HTTPTimeout}
	}
	return &digester{root: root, client: client, maxFiles: MaxMonitorFiles, cache: map[string]fileSum{}}
}

// observe returns a monitor's current observation: a digest.
func (d *digester) observe(ctx context.Context, t store.AutomationTrigger) (string, error) {
	switch t.Kind {
	case store.TriggerFiles:
		return d.files(t.Files)
	case store.TriggerHTTP:
		return d.http(ctx, t.URL)
	}
	return "", fmt.Errorf("observe: %s is not a monitor", t.Kind)
}

// files digests the files under the workspace matching any of globs: their
// paths and contents. Symbolic links are not followed (a link is digested
// by its target's name), so a glob never reads outside the workspace.
func (d *digester) files(globs []string) (string, error) {
	if d.root == "" {
		return "", errors.New("digest files: no workspace folder")
	}
	matched := map[string]bool{}
	for _, g := range globs {
		clean, err := CheckGlob(g)
		if err != nil {
			return "", err
		}
		pat := strings.Split(clean, "/")
		base := 0
		for base < len(pat)-1 && !hasMeta(pat[base]) {
			base++
		}
		start := filepath.Join(d.root, filepath.FromSlash(strings.Join(pat[:base], "/")))
		err = filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
					return nil
				}
				return err
			}
			rel, err := filepath.Rel(d.root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			segs := strings.Split(rel, "/")
			if e.IsDir() {
				if rel != "." && !matchPrefix(pat, segs) {
					return fs.SkipDir
				}
				return nil
			}
			if matchSegs(pat, segs) && !matched[rel] {
				matched[rel] = true
				if len(matched) > d.maxFiles {
					return fmt.Errorf("%w: %q matches more than %d files; narrow it", ErrTooManyFiles, text.Shorten(g, maxShown), d.maxFiles)
				}
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("digest files: %w", err)
		}
	}
	names := make([]string, 0, len(matched))
	for n := range matched {
		names = append(names, n)
	}
	slices.Sort(names)
	h := sha256.New()
	fmt.Fprintf(h, "files %d\n", len(names))
	for _, n := range names {
		sum, err := d.fileSum(filepath.Join(d.root, filepath.FromSlash(n)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while we looked
		}
		if err != nil {
			return "", fmt.Errorf("digest files: %w", err)
		}
		fmt.Fprintf(h, "%q %x\n", n, sum)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func (d *digester) fileSum(p string) ([sha256.Size]byte, error) {
	var zero [sha256.Size]byte
	fi, err := os.Lstat(p)
	if err != nil {
		return zero, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(p)
		if err != nil {
			return zero, err
		}
		return sha256.Sum256([]byte("symlink:" + target)), nil
	}
	if !fi.Mode().IsRegular() {
		return sha256.Sum256([]byte("special:" + fi.Mode().String())), nil
	}
	d.mu.Lock()
	c, ok := d.cache[p]
	d.mu.Unlock()
	if ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c.sum, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return zero, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return zero, err
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	d.mu.Lock()
	d.cache[p] = fileSum{size: fi.Size(), mtime: fi.ModTime(), sum: sum}
	d.mu.Unlock()
	return sum, nil
}

// http hashes the status code and body of a GET of url.
func (d *digester) http(ctx context.Context, url string) (string, error) {
	if err := workflows.CheckURL(url); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("poll %s: %w", url, err)
	}
	req.Header.Set("User-Agent", "cairn-monitor")
	req.Close = true // polls are rare: keep no idle connection around
	resp, err := d.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("poll %s: %w", url, err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	fmt.Fprintf(h, "status %d\n", resp.StatusCode)
	if _, err := io.Copy(h, io.LimitReader(resp.Body, MaxHTTPBody)); err != nil {
		return "", fmt.Errorf("poll %s: read body: %w", url, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// matchSegs reports whether the path segments name match the glob
// segments pat, where "**" matches any number of segments (zero included).
func matchSegs(pat, name []string) bool {
	if len(pat) == 0 {
		return len(name) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(name); i++ {
			if matchSegs(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	}
	if len(name) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], name[0]); !ok {
		return false
	}
	return matchSegs(pat[1:], name[1:])
}

// matchPrefix reports whether some path inside the folder dir could match
// pat, so a walk can skip folders that cannot hold a match.
func matchPrefix(pat, dir []string) bool {
	if len(dir) == 0 {
		return len(pat) > 0
	}
	if len(pat) == 0 {
		return false
	}
	if pat[0] == "**" {
		return true
	}
	if ok, _ := path.Match(pat[0], dir[0]); !ok {
		return false
	}
	return matchPrefix(pat[1:], dir[1:])
}
