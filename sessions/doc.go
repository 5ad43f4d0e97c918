// Package sessions keeps agent conversations: create (idempotent on the
// id), append messages, read them in pages, list, export, delete, and
// compact a session into a summary with archives, a memory file and
// retention. The command line and the MCP adapter both call this API.
//
// # Appends
//
// An append of one or many messages is one store operation: one indexed
// update of the session row and one insert per message. It costs the same
// at the ten-thousandth message as at the first (see BENCHMARKS.md), and it
// is atomic and safe from many processes at once (SQLite BEGIN IMMEDIATE
// with a busy timeout; SQLite's busy wait is not fair, so a write refused
// as busy, which is certain not to have committed, is tried again for up
// to a minute). Limits: MaxMessageBytes per message and
// MaxAppendBytes per append, both refused with a *LimitError that names
// the limit.
//
// # Compaction
//
// Compact replaces all but the last few messages of a session with a
// summary the caller wrote. One attempt goes:
//
//  1. Take the session's lock (locks/session-<id>), so that one attempt
//     at a time works on a session's memory file, and finish what an
//     earlier attempt left (Recover).
//  2. T1 (one transaction): settle abandoned prepared attempts as
//     interrupted, freeze the complete current state (session, every
//     message, the memory file's full summary) in a new prepared archive,
//     and apply retention.
//  3. Stage the full summary at memory/<id>.md.staged-<attempt> (temporary
//     file, fsync, rename, fsync of the folder).
//  4. T2 (one transaction): delete the compacted messages, insert a single
//     system message holding a UTF-8-safe preview of at most
//     MaxPreviewBytes (including the memory file's path and, when cut, a
//     truncation marker), mark the attempt succeeded, apply retention.
//     Messages appended after T1 are newer than the cut and stay.
//  5. Publish: rename the staged file to memory/<id>.md and fsync the
//     folder, so the memory file is always either the previous full
//     summary or the new one, never a torn mix.
//
// A failed or cancelled attempt is settled as failed and its staged file
// removed; the previous memory file stays. A crash leaves one of these
// states, each repaired by the next attempt's Recover (or RecoverAll at
// startup): before T2, a prepared archive (settled as interrupted by the
// next T1) and maybe a staged file (removed); after T2, a staged file of
// the session's current attempt, which is published. Until then the
// preview may point at the previous full text; committed state is never
// undone.
//
// Retention runs inside every step's transaction: per session, the newest
// complete archives (succeeded, failed or interrupted) up to the target
// (Options.MaxArchives, default DefaultMaxArchives; 0 disables cleanup)
// are kept, the current attempt always, and prepared (unresolved) ones are
// never deleted.
package sessions
