-- Sessions: agent conversations. An append updates one sessions row and
-- inserts message rows, so its cost does not grow with the session.
CREATE TABLE sessions (
  id              TEXT PRIMARY KEY,
  title           TEXT NOT NULL DEFAULT '',
  parent_id       TEXT NOT NULL DEFAULT '',
  message_count   INTEGER NOT NULL DEFAULT 0,
  last_seq        INTEGER NOT NULL DEFAULT 0,
  compactions     INTEGER NOT NULL DEFAULT 0,
  summary_archive TEXT NOT NULL DEFAULT '',
  compacted_at    INTEGER NOT NULL DEFAULT 0, -- unix milliseconds, 0 = never
  revision        INTEGER NOT NULL,
  created_at      INTEGER NOT NULL,           -- unix milliseconds
  updated_at      INTEGER NOT NULL
);
CREATE INDEX sessions_created ON sessions (created_at, id);

CREATE TABLE session_messages (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq        INTEGER NOT NULL,
  id         TEXT NOT NULL,
  role       TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
  parts      TEXT NOT NULL, -- JSON array
  metadata   TEXT NOT NULL, -- JSON object
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, seq)
);
CREATE UNIQUE INDEX session_messages_id ON session_messages (session_id, id);

-- Compaction attempts, each with the complete state before it (frozen).
CREATE TABLE session_archives (
  n             INTEGER PRIMARY KEY, -- creation order
  id            TEXT NOT NULL UNIQUE,
  session_id    TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  status        TEXT NOT NULL CHECK (status IN ('prepared', 'succeeded', 'failed', 'interrupted')),
  cut_seq       INTEGER NOT NULL,
  message_count INTEGER NOT NULL,
  digest        TEXT NOT NULL, -- hex SHA-256 of state
  state         TEXT NOT NULL, -- JSON store.ArchiveState
  error         TEXT NOT NULL DEFAULT '',
  created_at    INTEGER NOT NULL,
  settled_at    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX session_archives_session ON session_archives (session_id, n);

-- An archive is frozen: what it holds never changes after it is written.
CREATE TRIGGER session_archives_frozen BEFORE UPDATE OF id, session_id, cut_seq, message_count, digest, state, created_at ON session_archives
BEGIN
  SELECT RAISE(ABORT, 'session archives are frozen');
END;
