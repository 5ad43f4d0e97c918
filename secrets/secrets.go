// Package secrets keeps the values that workflows read as
// `${{ secrets.NAME }}`: one JSON file per workspace, <state dir>/secrets.json,
// mode 0600. The file is the store: there is no OS keychain backend (no
// well-kept pure-Go library reaches one on every platform we run on).
//
// The file is refused when it is a symbolic link, not a regular file, not
// owned by this user, or readable or writable by group or others: a secret
// is only as safe as the file it lives in. Writes replace it atomically
// under the lock locks/secrets, so concurrent `secrets set` never lose each
// other's values; reads take no lock (a rename is atomic).
package secrets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"

	"github.com/cairnhq/cairn/internal/atomicfile"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/locks"
)

// FileName is the secrets file in a workspace's state folder.
const FileName = "secrets.json"

// Bounds: a name, a value, how many secrets, and the file itself.
const (
	MaxNameLen  = 64
	MaxValueLen = 64 << 10
	MaxSecrets  = 1000
	maxFileSize = MaxSecrets*(MaxValueLen/8) + 1<<20
)

var nameRE = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// ValidateName refuses a name that is not upper-case letters, digits and _
// (not starting with a digit), or longer than MaxNameLen.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("secret name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("secret name is longer than %d characters", MaxNameLen)
	case !nameRE.MatchString(name):
		return fmt.Errorf("bad secret name %q: use A-Z, 0-9 and _, not starting with a digit (like GITHUB_TOKEN)", text.Shorten(name, 40))
	}
	return nil
}

// NotSetError says a workflow named a secret the store does not hold.
type NotSetError struct{ Name string }

func (e *NotSetError) Error() string {
	return fmt.Sprintf("secret %s is not set (set it with: mcp-host secrets set %s)", e.Name, e.Name)
}

// Store is the secrets file of one workspace. Its methods are safe for
// concurrent use across processes (see the package comment).
type Store struct {
	path     string
	locksDir string
}

// Open returns the store of the workspace state folder stateDir, locking
// in locksDir for writes; it creates nothing.
func Open(stateDir, locksDir string) *Store {
	return &Store{path: filepath.Join(stateDir, FileName), locksDir: locksDir}
}

// Path is the secrets file.
func (s *Store) Path() string { return s.path }

// file is the file's content. Values are base64 (what encoding/json does
// with []byte), so that a grep of the state folder for a value does not
// find it; this is not encryption: the file's mode is the protection.
type file struct {
	Version int               `json:"version"`
	Secrets map[string][]byte `json:"secrets"`
}

// read loads the file; a missing file holds no secrets.
func (s *Store) read() (map[string]string, error) {
	f, err := os.OpenFile(s.path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("read secrets %s: it is a symbolic link; replace it with a regular file (mode 0600)", s.path)
	}
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", err)
	}
	if err := checkMode(s.path, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read secrets: %w", err)
	}
	if len(b) > maxFileSize {
		return nil, fmt.Errorf("read secrets %s: larger than %d bytes", s.path, maxFileSize)
	}
	var v file
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("read secrets %s: %w", s.path, err)
	}
	if v.Version != 1 {
		return nil, fmt.Errorf("read secrets %s: unknown version %d", s.path, v.Version)
	}
	out := make(map[string]string, len(v.Secrets))
	for k, b := range v.Secrets {
		out[k] = string(b)
	}
	return out, nil
}

// checkMode refuses a file others could read or change.
func checkMode(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("read secrets %s: not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("read secrets %s: mode %04o lets group or others read it; run: chmod 600 %s", path, perm, path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("read secrets %s: owned by uid %d, not by you (uid %d)", path, st.Uid, os.Geteuid())
	}
	return nil
}

// Get returns the values of names. A name the store does not hold gives a
// *NotSetError.
func (s *Store) Get(names []string) (map[string]string, error) {
	if len(names) == 0 {
		return map[string]string{}, nil
	}
	all, err := s.read()
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(names))
	for _, n := range names {
		v, ok := all[n]
		if !ok {
			return nil, &NotSetError{Name: n}
		}
		out[n] = v
	}
	return out, nil
}

// Names lists the secrets held, sorted; never their values.
func (s *Store) Names() ([]string, error) {
	all, err := s.read()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Set stores value under name, replacing any earlier value.
func (s *Store) Set(ctx context.Context, name, value string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	switch {
	case value == "":
		return errors.New("set secret: the value is empty")
	case len(value) > MaxValueLen:
		return fmt.Errorf("set secret: the value is longer than %d bytes", MaxValueLen)
	case strings.ContainsAny(value, "\r\n\x00"):
		// Output is redacted line by line: a value spanning lines could
		// not be found in it.
		return errors.New("set secret: the value must be one line, without NUL bytes (encode a multi-line value, e.g. as base64)")
	}
	return s.update(ctx, func(all map[string]string) (bool, error) {
		if _, ok := all[name]; !ok && len(all) >= MaxSecrets {
			return false, fmt.Errorf("set secret: the store holds %d secrets already; delete some first", MaxSecrets)
		}
		all[name] = value
		return true, nil
	})
}

// Delete removes name; deleting a secret that is not set is an error.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return s.update(ctx, func(all map[string]string) (bool, error) {
		if _, ok := all[name]; !ok {
			return false, &NotSetError{Name: name}
		}
		delete(all, name)
		return true, nil
	})
}

// update changes the file under the secrets lock.
func (s *Store) update(ctx context.Context, change func(map[string]string) (bool, error)) error {
	l, err := locks.Acquire(ctx, s.locksDir, "secrets")
	if err != nil {
		return fmt.Errorf("lock secrets: %w", err)
	}
	defer l.Unlock()
	all, err := s.read()
	if err != nil {
		return err
	}
	ok, err := change(all)
	if err != nil || !ok {
		return err
	}
	enc := make(map[string][]byte, len(all))
	for k, v := range all {
		enc[k] = []byte(v)
	}
	b, err := json.MarshalIndent(file{Version: 1, Secrets: enc}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode secrets: %w", err)
	}
	if err := atomicfile.WriteFile(s.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write secrets: %w", err)
	}
	return nil
}
