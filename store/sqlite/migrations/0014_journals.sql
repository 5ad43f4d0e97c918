-- Run journals kept in the store (store.JournalStore): a journal's size
-- and when it last grew, and its chunks by byte offset. The run engine
-- uses them when the store is shared; a SQLite workspace keeps journals
-- as files, so these tables stay empty unless asked for.
CREATE TABLE journals (
  run_id     TEXT PRIMARY KEY,
  size       INTEGER NOT NULL,
  updated_at INTEGER NOT NULL  -- unix milliseconds
);
CREATE INDEX journals_updated ON journals (updated_at);
CREATE TABLE journal_chunks (
  run_id TEXT NOT NULL,
  off    INTEGER NOT NULL,
  data   BLOB NOT NULL,
  PRIMARY KEY (run_id, off)
) WITHOUT ROWID;
-- Compaction's memory files kept in the store (store.MemoryFileStore),
-- per attempt: the session's memory is the row of the attempt its
-- summary names.
CREATE TABLE memory_files (
  session_id TEXT NOT NULL,
  archive_id TEXT NOT NULL,
  body       TEXT NOT NULL,
  PRIMARY KEY (session_id, archive_id)
) WITHOUT ROWID;
