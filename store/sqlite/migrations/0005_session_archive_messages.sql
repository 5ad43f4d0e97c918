-- The messages a compaction archive froze, one row each, so that freezing
-- a long session streams inside SQLite instead of building one JSON value.
-- Archives with in_rows = 0 (written before this) hold them inside state.
CREATE TABLE session_archive_messages (
  archive_n  INTEGER NOT NULL REFERENCES session_archives (n) ON DELETE CASCADE,
  seq        INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  id         TEXT NOT NULL,
  role       TEXT NOT NULL,
  parts      TEXT NOT NULL,
  metadata   TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (archive_n, seq)
) WITHOUT ROWID;

ALTER TABLE session_archives ADD COLUMN in_rows INTEGER NOT NULL DEFAULT 0;

CREATE TRIGGER session_archive_messages_frozen BEFORE UPDATE ON session_archive_messages
BEGIN
  SELECT RAISE(ABORT, 'session archives are frozen');
END;
