CREATE TABLE runs (
  id          TEXT PRIMARY KEY,
  target      TEXT NOT NULL,
  status      TEXT NOT NULL,
  input       TEXT NOT NULL,
  literals    TEXT NOT NULL,
  trigger     TEXT NOT NULL,  -- JSON store.Trigger
  session_id  TEXT NOT NULL DEFAULT '',
  result      TEXT,
  error       TEXT NOT NULL DEFAULT '',
  revision    INTEGER NOT NULL,
  created_at  INTEGER NOT NULL, -- unix milliseconds
  updated_at  INTEGER NOT NULL
);
CREATE INDEX runs_status ON runs (status, created_at);
CREATE INDEX runs_target ON runs (target, created_at);
