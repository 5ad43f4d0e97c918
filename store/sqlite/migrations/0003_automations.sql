-- Automations: the spec people edit (versioned by revision) and the state
-- the scheduler records (JSON store.AutomationState, not versioned).
CREATE TABLE automations (
  id          TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  key         TEXT NOT NULL,
  target      TEXT NOT NULL,
  input       TEXT NOT NULL,
  trigger     TEXT NOT NULL,  -- JSON store.AutomationTrigger
  enabled     INTEGER NOT NULL,
  note        TEXT NOT NULL DEFAULT '',
  overlap     TEXT NOT NULL,
  missed      TEXT NOT NULL,
  source      TEXT NOT NULL DEFAULT '',
  revision    INTEGER NOT NULL,
  created_at  INTEGER NOT NULL, -- unix milliseconds
  updated_at  INTEGER NOT NULL,
  state       TEXT NOT NULL,  -- JSON store.AutomationState
  UNIQUE (owner, key)
);
CREATE INDEX automations_key ON automations (key);

-- One row per fire: (automation_id, nominal) is the fire's identity, so
-- racing schedulers can never fire one slot twice. The newest
-- store.FireHistory rows per automation are kept.
CREATE TABLE automation_fires (
  automation_id TEXT NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
  nominal       INTEGER NOT NULL, -- unix milliseconds
  actual        INTEGER NOT NULL,
  outcome       TEXT NOT NULL,
  run_id        TEXT NOT NULL DEFAULT '',
  manual        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (automation_id, nominal)
) WITHOUT ROWID;

-- Bumped by every create, update and delete of an automation, so that a
-- scheduler notices other processes' edits with one cheap read.
CREATE TABLE automations_version (
  id      INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
);
INSERT INTO automations_version (id, version) VALUES (1, 0);
