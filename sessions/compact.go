package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/cairnhq/cairn/internal/atomicfile"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/store"
)

// CompactParams describe a compaction.
type CompactParams struct {
	SessionID string `json:"session_id"`
	// Summary is the full summary of the compacted messages: saved whole
	// in the memory file, and as a preview in the session.
	Summary string `json:"summary"`
	// KeepLast is how many of the newest messages stay after the summary;
	// nil means DefaultKeepLast.
	KeepLast *int `json:"keep_last,omitempty"`
}

// CompactResult is what a compaction did.
type CompactResult struct {
	Session *store.Session `json:"session"`
	// Archive is this attempt (succeeded), without its frozen state.
	Archive *store.Archive `json:"archive"`
	// Compacted is how many messages the summary replaced.
	Compacted int64 `json:"compacted"`
	// MemoryPath is the memory file (empty when none is written).
	MemoryPath string `json:"memory_path,omitempty"`
	// PreviewBytes is the size of the summary message's text; Truncated
	// says whether the summary had to be cut to fit MaxPreviewBytes.
	PreviewBytes int  `json:"preview_bytes"`
	Truncated    bool `json:"truncated"`
	// Interrupted lists abandoned attempts settled on the way; Pruned the
	// archives retention deleted.
	Interrupted []string `json:"interrupted,omitempty"`
	Pruned      []string `json:"pruned,omitempty"`
	// Warnings report failures after the commit (publishing the memory
	// file): the compaction stands, the next one repairs them.
	Warnings []string `json:"warnings,omitempty"`
}

// Compact replaces all but the last KeepLast messages of a session with a
// summary (see the package documentation for the steps and guarantees).
// On an error before the commit the session, the memory file and every
// earlier archive are as they were; the attempt's own archive stays as
// evidence, settled as failed.
func (m *Manager) Compact(ctx context.Context, p CompactParams) (*CompactResult, error) {
	if err := ids.Validate("session id", p.SessionID); err != nil {
		return nil, err
	}
	keep := DefaultKeepLast
	if p.KeepLast != nil {
		keep = *p.KeepLast
	}
	switch {
	case keep < 0:
		return nil, invalidf("keep_last", "%d must not be negative", keep)
	case strings.TrimSpace(p.Summary) == "":
		return nil, invalidf("summary", "must not be empty")
	case !utf8.ValidString(p.Summary):
		return nil, invalidf("summary", "must be UTF-8 text")
	}
	unlock, err := m.lock(ctx, p.SessionID)
	if err != nil {
		return nil, fmt.Errorf("compact session %s: %w", p.SessionID, err)
	}
	defer unlock()
	if err := m.step("locked"); err != nil {
		return nil, err
	}
	sess, err := m.st.GetSession(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	if err := m.recoverLocked(sess); err != nil {
		return nil, fmt.Errorf("compact session %s: %w", p.SessionID, err)
	}
	prevMemory, err := m.readMemory(ctx, p.SessionID)
	if err != nil {
		return nil, fmt.Errorf("compact session %s: %w", p.SessionID, err)
	}

	attempt := ids.New("arc")
	prep, err := m.st.PrepareCompaction(ctx, store.PrepareCompactionParams{
		SessionID: p.SessionID, ArchiveID: attempt, KeepLast: keep, Memory: prevMemory, MaxArchives: m.maxArchives(),
		Now: m.clk.Now(),
	})
	if err != nil {
		return nil, err
	}
	res := &CompactResult{Interrupted: prep.Interrupted, Pruned: prep.Pruned, MemoryPath: m.MemoryPath(p.SessionID)}
	// From here on the attempt exists: every failure settles it.
	fail := func(cause error) (*CompactResult, error) {
		m.removeStaged(p.SessionID, attempt)
		reason := cause.Error()
		if ctx.Err() != nil {
			reason = "cancelled: " + reason
		}
		bg := context.WithoutCancel(ctx)
		_, ferr := m.st.FailCompaction(bg, store.FailCompactionParams{
			SessionID: p.SessionID, ArchiveID: attempt, Reason: reason, MaxArchives: m.maxArchives(),
			Now: m.clk.Now(),
		})
		if ferr != nil {
			return nil, fmt.Errorf("compact session %s: %w (and settling the attempt failed: %v)", p.SessionID, cause, ferr)
		}
		return nil, fmt.Errorf("compact session %s: %w", p.SessionID, cause)
	}
	if err := m.step("prepared"); err != nil {
		return fail(err)
	}
	if m.opts.MemoryDir != "" {
		if err := os.MkdirAll(m.opts.MemoryDir, 0o700); err != nil {
			return fail(fmt.Errorf("create memory folder: %w", err))
		}
		if err := atomicfile.WriteFile(m.stagedPath(p.SessionID, attempt), []byte(p.Summary), 0o600); err != nil {
			return fail(fmt.Errorf("stage summary: %w", err))
		}
	}
	if err := m.stageShared(ctx, p.SessionID, attempt, p.Summary); err != nil {
		return fail(err)
	}
	if err := m.step("staged"); err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}

	preview, truncated := Preview(p.Summary, m.pointer(p.SessionID))
	parts, _ := json.Marshal([]textPart{{Type: PartText, Text: preview}})
	meta, _ := json.Marshal(map[string]any{"compaction": map[string]any{
		"archive_id":    attempt,
		"memory_file":   res.MemoryPath,
		"summary_bytes": len(p.Summary),
		"truncated":     truncated,
		"through_seq":   prep.Archive.CutSeq,
	}})
	commit, err := m.st.CommitCompaction(ctx, store.CommitCompactionParams{
		SessionID: p.SessionID, ArchiveID: attempt, MaxArchives: m.maxArchives(),
		Summary: &store.Message{Role: store.RoleSystem, Parts: parts, Metadata: meta},
		Now:     m.clk.Now(),
	})
	if err != nil {
		var ce *store.CommitError
		if errors.As(err, &ce) && ce.Outcome == store.Unknown {
			// It may have committed: leave the staged file and the
			// attempt for Recover to settle from what is on disk.
			return nil, fmt.Errorf("compact session %s: %w", p.SessionID, err)
		}
		return fail(err)
	}
	res.Session, res.Archive, res.Compacted = commit.Session, commit.Archive, commit.Compacted
	res.PreviewBytes, res.Truncated = len(preview), truncated
	res.Pruned = append(res.Pruned, commit.Pruned...)
	if err := m.step("committed"); err != nil {
		res.Warnings = append(res.Warnings, err.Error())
		return res, nil
	}
	if m.opts.MemoryDir != "" {
		if err := m.publish(p.SessionID, attempt); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("publish memory file: %v (the next compaction of this session retries)", err))
		}
	}
	if err := m.publishShared(ctx, p.SessionID, attempt); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("prune earlier summaries in the store: %v (the next compaction retries)", err))
	}
	if err := m.step("published"); err != nil {
		res.Warnings = append(res.Warnings, err.Error())
	}
	return res, nil
}

func (m *Manager) step(name string) error {
	if m.hook == nil {
		return nil
	}
	return m.hook(name)
}

// Preview returns the text that replaces compacted messages: the summary,
// cut on a UTF-8 character boundary with a truncation marker when needed,
// then a line pointing at the full text, MaxPreviewBytes at most in all.
func Preview(summary, pointer string) (preview string, truncated bool) {
	tail := "\n\n" + pointer
	if len(summary)+len(tail) <= MaxPreviewBytes {
		return summary + tail, false
	}
	marker := func(shown int) string {
		return fmt.Sprintf("\n\n[… summary truncated: %d of %d bytes shown …]", shown, len(summary))
	}
	budget := max(MaxPreviewBytes-len(tail)-len(marker(len(summary))), 0)
	cut := min(budget, len(summary))
	for cut > 0 && !utf8.RuneStart(summary[cut]) {
		cut--
	}
	return summary[:cut] + marker(cut) + tail, true
}

// MemoryPath returns the memory file of a session, or "" when the Manager
// writes none.
func (m *Manager) MemoryPath(sessionID string) string {
	if m.opts.MemoryDir == "" {
		return ""
	}
	return filepath.Join(m.opts.MemoryDir, sessionID+".md")
}

func (m *Manager) pointer(sessionID string) string {
	if m.opts.MemoryDir == "" {
		return "Full summary: not saved (memory/" + sessionID + ".md is not written in a dry run)."
	}
	return "Full summary: " + m.MemoryPath(sessionID)
}

// ReadMemory returns the full summary in a session's memory file, "" when
// there is none.
func (m *Manager) ReadMemory(sessionID string) (string, error) {
	if err := ids.Validate("session id", sessionID); err != nil {
		return "", err
	}
	return m.readMemory(context.Background(), sessionID)
}

func (m *Manager) readMemory(ctx context.Context, sessionID string) (string, error) {
	if m.opts.MemoryFiles != nil {
		sess, err := m.st.GetSession(ctx, sessionID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("read memory file: %w", err)
		}
		if err == nil {
			if body, ok, err := m.readShared(ctx, sess); ok || err != nil {
				return body, err
			}
		}
	}
	if m.opts.MemoryDir == "" {
		return "", nil
	}
	b, err := os.ReadFile(m.MemoryPath(sessionID))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read memory file: %w", err)
	}
	return string(b), nil
}

func (m *Manager) stagedPath(sessionID, attempt string) string {
	return filepath.Join(m.opts.MemoryDir, sessionID+".md.staged-"+attempt)
}

// publish renames an attempt's staged summary over the memory file and
// makes the rename durable.
func (m *Manager) publish(sessionID, attempt string) error {
	if err := os.Rename(m.stagedPath(sessionID, attempt), m.MemoryPath(sessionID)); err != nil {
		return err
	}
	return atomicfile.SyncDir(m.opts.MemoryDir)
}

// stagedRE matches a staged summary (<id>.md.staged-<attempt>) and the
// temporary file atomicfile writes it through (.<that>.tmp-<n>); attempts
// are ids.New("arc") ids, so another session's memory file (which ends in
// .md) never matches.
var stagedRE = regexp.MustCompile(`^(\.?)(.+)\.md\.staged-(arc_[0-9a-z]{26})((?:\.tmp-[0-9]+)?)$`)

type stagedFile struct {
	name      string
	sessionID string
	attempt   string
	temp      bool
}

// stagedFiles lists the staged and temporary files in the memory folder,
// of one session or (sessionID "") of all.
func (m *Manager) stagedFiles(sessionID string) ([]stagedFile, error) {
	if m.opts.MemoryDir == "" {
		return nil, nil
	}
	entries, err := os.ReadDir(m.opts.MemoryDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list memory folder: %w", err)
	}
	var out []stagedFile
	for _, e := range entries {
		g := stagedRE.FindStringSubmatch(e.Name())
		if g == nil || !e.Type().IsRegular() {
			continue
		}
		temp := g[4] != ""
		if temp != (g[1] == ".") || ids.Validate("session id", g[2]) != nil {
			continue
		}
		if sessionID != "" && g[2] != sessionID {
			continue
		}
		out = append(out, stagedFile{name: e.Name(), sessionID: g[2], attempt: g[3], temp: temp})
	}
	return out, nil
}

// removeStaged removes an attempt's staged file and temporary files; what
// cannot be removed now is removed by a later Recover.
func (m *Manager) removeStaged(sessionID, attempt string) {
	files, _ := m.stagedFiles(sessionID)
	for _, f := range files {
		if f.attempt == attempt {
			os.Remove(filepath.Join(m.opts.MemoryDir, f.name))
		}
	}
}

// removeFiles removes every file of a session from the memory folder.
func (m *Manager) removeFiles(sessionID string) error {
	if m.opts.MemoryDir == "" {
		return nil
	}
	files, err := m.stagedFiles(sessionID)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		if err := os.Remove(filepath.Join(m.opts.MemoryDir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(m.MemoryPath(sessionID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := m.removeShared(sessionID); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove memory files: %w", errors.Join(errs...))
	}
	return nil
}

// Recover finishes what interrupted attempts left in a session's memory
// folder: it publishes the staged summary of the session's current
// attempt (committed, then cut off before it was published) and removes
// other staged and temporary files. Compact does this first; a host calls
// RecoverAll at startup. Prepared archives are settled as interrupted by
// the next compaction, not here: a read-side recovery never rewrites
// evidence.
func (m *Manager) Recover(ctx context.Context, sessionID string) error {
	if err := ids.Validate("session id", sessionID); err != nil {
		return err
	}
	unlock, err := m.lock(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("recover session %s: %w", sessionID, err)
	}
	defer unlock()
	sess, err := m.st.GetSession(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		// Deleted: whatever is left of it goes.
		return m.removeFiles(sessionID)
	}
	if err != nil {
		return err
	}
	if err := m.recoverLocked(sess); err != nil {
		return fmt.Errorf("recover session %s: %w", sessionID, err)
	}
	return nil
}

// RecoverAll runs Recover for every session with files to recover.
func (m *Manager) RecoverAll(ctx context.Context) error {
	files, err := m.stagedFiles("")
	if err != nil {
		return err
	}
	done := map[string]bool{}
	var errs []error
	for _, f := range files {
		if done[f.sessionID] {
			continue
		}
		done[f.sessionID] = true
		if err := m.Recover(ctx, f.sessionID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// recoverLocked does Recover's work; the caller holds the session's lock.
func (m *Manager) recoverLocked(sess *store.Session) error {
	files, err := m.stagedFiles(sess.ID)
	if err != nil {
		return err
	}
	for _, f := range files {
		if !f.temp && f.attempt == sess.Summary.ArchiveID {
			if err := m.publish(sess.ID, f.attempt); err != nil {
				return fmt.Errorf("publish memory file of attempt %s: %w", f.attempt, err)
			}
			continue
		}
		if err := os.Remove(filepath.Join(m.opts.MemoryDir, f.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale staged summary: %w", err)
		}
	}
	return nil
}
