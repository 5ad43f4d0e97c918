-- Runs: one row per run. Literals are the definition snapshot and the
-- validated input locked at launch; a resumed run executes them.
CREATE TABLE runs (
  id               TEXT PRIMARY KEY,
  target           TEXT NOT NULL,
  status           TEXT NOT NULL,
  input            TEXT NOT NULL,
  literals         TEXT NOT NULL,
  trigger          TEXT NOT NULL,  -- JSON store.Trigger
  session_id       TEXT NOT NULL DEFAULT '',
  result           TEXT,
  error            TEXT NOT NULL DEFAULT '',
  owner_pid        INTEGER NOT NULL DEFAULT 0,
  claim            TEXT NOT NULL DEFAULT '', -- the owner's claim token
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  question         TEXT,           -- JSON store.Question while waiting on one
  wake_at          INTEGER,        -- unix ms: a waiting run becomes runnable
  revision         INTEGER NOT NULL,
  created_at       INTEGER NOT NULL, -- unix milliseconds
  updated_at       INTEGER NOT NULL,
  started_at       INTEGER,
  finished_at      INTEGER,
  journal          TEXT,           -- the output journal, when kept with the run (not in a file)
  change_seq       INTEGER NOT NULL -- every write takes the next number: see ChangedRuns
);
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_status ON runs (status, created_at, id);
CREATE INDEX runs_target ON runs (target, created_at, id);
CREATE INDEX runs_change ON runs (change_seq);

-- The ledger: per step path and call position, started/finished with the
-- recorded result. The start is written before the step's effect is
-- dispatched and the result after it (the simplex rule).
CREATE TABLE run_ledger (
  run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  path        TEXT NOT NULL,
  position    INTEGER NOT NULL,
  seq         INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  state       TEXT NOT NULL,   -- started | finished
  status      TEXT NOT NULL DEFAULT '',
  starts      INTEGER NOT NULL DEFAULT 0,
  detail      TEXT,
  result      TEXT,
  error       TEXT NOT NULL DEFAULT '',
  answer      TEXT,
  owner_pid   INTEGER NOT NULL DEFAULT 0,
  started_at  INTEGER,
  finished_at INTEGER,
  PRIMARY KEY (run_id, path, position)
) WITHOUT ROWID;
