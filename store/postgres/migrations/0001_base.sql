-- The base of a workspace's schema (cairn_<workspace id>): operations,
-- runs with their ledgers and change numbers, and the duties' leases.
-- Times are timestamptz (milliseconds, see store.Millis); raw JSON that
-- must come back byte for byte (inputs, literals, results) is text.

-- Which workspace this schema holds: Open refuses a schema whose
-- workspace id differs from the one asked for (two ids that map to one
-- schema name).
CREATE TABLE workspace (
  one          boolean PRIMARY KEY DEFAULT true CHECK (one),
  workspace_id text NOT NULL
);

-- Every committed write operation, by id, so that an operation whose
-- commit outcome was unknown can be looked up (store.Outcome).
CREATE TABLE operations (
  id   text PRIMARY KEY,
  kind text NOT NULL,
  at   timestamptz NOT NULL
);
CREATE INDEX operations_at ON operations (at);

-- Runs: one row per run. Literals are the definition snapshot and the
-- validated input locked at launch; a resumed run executes them.
CREATE TABLE runs (
  id               text PRIMARY KEY,
  target           text NOT NULL,
  status           text NOT NULL,
  input            text NOT NULL,
  literals         text NOT NULL,
  trigger          text NOT NULL,  -- JSON store.Trigger
  session_id       text NOT NULL DEFAULT '',
  result           text,
  error            text NOT NULL DEFAULT '',
  owner_pid        integer NOT NULL DEFAULT 0,
  claim            text NOT NULL DEFAULT '', -- the owner's claim token
  cancel_requested boolean NOT NULL DEFAULT false,
  question         text,           -- JSON store.Question while waiting on one
  wake_at          timestamptz,    -- a waiting run becomes runnable
  revision         bigint NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  started_at       timestamptz,
  finished_at      timestamptz,
  journal          bytea,          -- the output journal, when kept with the run
  change_seq       bigint NOT NULL -- see run_changes
);
CREATE INDEX runs_created ON runs (created_at, id);
CREATE INDEX runs_status ON runs (status, created_at, id);
CREATE INDEX runs_target ON runs (target, created_at, id);
CREATE INDEX runs_change ON runs (change_seq);

-- The runs' change counter (store.RunStore.ChangedRuns): every run write
-- takes the next number by updating this one row, whose lock it holds
-- until it commits, so numbers are given in commit order (a sequence
-- would not be: a poller could pass a number whose write commits later).
CREATE TABLE run_changes (
  one  boolean PRIMARY KEY DEFAULT true CHECK (one),
  last bigint NOT NULL
);
INSERT INTO run_changes (one, last) VALUES (true, 0);

-- The ledger: per step path and call position, started/finished with the
-- recorded result. The start is written before the step's effect is
-- dispatched and the result after it.
CREATE TABLE run_ledger (
  run_id      text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  path        text NOT NULL,
  position    integer NOT NULL,
  seq         bigint NOT NULL,
  kind        text NOT NULL,
  state       text NOT NULL,   -- started | finished
  status      text NOT NULL DEFAULT '',
  starts      integer NOT NULL DEFAULT 0,
  detail      text,
  result      text,
  error       text NOT NULL DEFAULT '',
  answer      text,
  owner_pid   integer NOT NULL DEFAULT 0,
  started_at  timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (run_id, path, position)
);

-- Leases of the duties (store.Lease). A row is never deleted, so that
-- its epoch only grows: a released lease keeps it with an empty holder.
CREATE TABLE leases (
  name    text PRIMARY KEY,
  holder  text NOT NULL,
  pid     integer NOT NULL,
  epoch   bigint NOT NULL,
  flocked boolean NOT NULL,
  since   timestamptz NOT NULL,
  renewed timestamptz NOT NULL,
  expires timestamptz NOT NULL
);
