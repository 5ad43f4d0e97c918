// Package ids validates and generates the identifiers that Cairn stores and
// turns into file names: run, session and automation ids, workflow names,
// automation keys and lock names.
//
// Every id that reaches a path or a lock file passes Validate first, so a
// hostile id ("../x", a NUL byte, a kilobyte of text) is refused before it
// touches the file system or the store.
package ids

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// MaxLen is the longest id accepted.
const MaxLen = 128

// InvalidError says why an id was refused.
type InvalidError struct {
	Kind   string // "run id", "session id", ...
	ID     string
	Reason string
}

func (e *InvalidError) Error() string {
	shown := e.ID
	if len(shown) > 40 {
		shown = shown[:40] + "…"
	}
	return fmt.Sprintf("invalid %s %q: %s", e.Kind, shown, e.Reason)
}

// Validate reports whether s is a safe id: 1 to MaxLen characters from
// [A-Za-z0-9._:-], not starting with '.' or '-', and without "..".
// kind names the id in the error ("run id", "automation key").
func Validate(kind, s string) error {
	bad := func(reason string) error { return &InvalidError{Kind: kind, ID: s, Reason: reason} }
	switch {
	case s == "":
		return bad("must not be empty")
	case len(s) > MaxLen:
		return bad(fmt.Sprintf("longer than %d characters", MaxLen))
	case s[0] == '.' || s[0] == '-':
		return bad("must not start with '.' or '-'")
	case strings.Contains(s, ".."):
		return bad(`must not contain ".."`)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == ':' {
			continue
		}
		return bad(fmt.Sprintf("character %q not allowed (use letters, digits, '.', '_', '-', ':')", c))
	}
	return nil
}

var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// New returns a fresh id with the given prefix ("run", "ses", "aut"):
// prefix_ then 26 characters that sort by creation time (48-bit
// milliseconds, 80 random bits), like a ULID.
func New(prefix string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return prefix + "_" + enc.EncodeToString(b[:])
}
