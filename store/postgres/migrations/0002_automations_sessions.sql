-- Automations, sessions, the notification outbox and the audit trail.
-- As in 0001, times are timestamptz (milliseconds) and JSON documents
-- text (kept byte for byte as written); the keys listings sort by are
-- COLLATE "C", so they sort by bytes on every server, as in store/sqlite.

-- Automations: the spec people edit (versioned by revision) and the state
-- the scheduler records (JSON store.AutomationState, not versioned). Every
-- write locks the automation's row (SELECT ... FOR UPDATE), so fires,
-- records and edits of one automation from many hosts take turns.
CREATE TABLE automations (
  id          text COLLATE "C" PRIMARY KEY,
  owner       text COLLATE "C" NOT NULL,
  key         text COLLATE "C" NOT NULL,
  target      text NOT NULL,
  input       text NOT NULL,
  trigger     text NOT NULL,  -- JSON store.AutomationTrigger
  enabled     boolean NOT NULL,
  note        text NOT NULL DEFAULT '',
  overlap     text NOT NULL,
  missed      text NOT NULL,
  source      text NOT NULL DEFAULT '',
  approval    text NOT NULL DEFAULT '',
  revision    bigint NOT NULL,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL,
  state       text NOT NULL,  -- JSON store.AutomationState
  UNIQUE (owner, key)
);
CREATE INDEX automations_key ON automations (key);

-- One row per fire: (automation_id, nominal) is the fire's identity, so
-- racing schedulers on any number of hosts can never fire one slot twice.
CREATE TABLE automation_fires (
  automation_id text COLLATE "C" NOT NULL REFERENCES automations (id) ON DELETE CASCADE,
  nominal       timestamptz NOT NULL,
  actual        timestamptz NOT NULL,
  outcome       text NOT NULL,
  run_id        text NOT NULL DEFAULT '',
  manual        boolean NOT NULL DEFAULT false,
  PRIMARY KEY (automation_id, nominal)
);
-- Retention deletes a run with the fire history rows that name it.
CREATE INDEX automation_fires_run ON automation_fires (run_id);

-- Bumped in the transaction of every create, update and delete of an
-- automation, so the new version is seen together with the edit.
CREATE TABLE automations_version (
  id      integer PRIMARY KEY CHECK (id = 1),
  version bigint NOT NULL
);
INSERT INTO automations_version (id, version) VALUES (1, 0);

-- Sessions: an append updates one sessions row (which hands out the
-- sequence numbers under its row lock) and inserts message rows.
CREATE TABLE sessions (
  id              text COLLATE "C" PRIMARY KEY,
  title           text NOT NULL DEFAULT '',
  parent_id       text COLLATE "C" NOT NULL DEFAULT '',
  message_count   bigint NOT NULL DEFAULT 0,
  last_seq        bigint NOT NULL DEFAULT 0,
  compactions     bigint NOT NULL DEFAULT 0,
  summary_archive text NOT NULL DEFAULT '',
  compacted_at    timestamptz,              -- NULL: never
  revision        bigint NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL
);
CREATE INDEX sessions_created ON sessions (created_at, id);

CREATE TABLE session_messages (
  session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq        bigint NOT NULL,
  id         text COLLATE "C" NOT NULL,
  role       text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
  parts      text NOT NULL, -- JSON array
  metadata   text NOT NULL, -- JSON object
  created_at timestamptz NOT NULL,
  PRIMARY KEY (session_id, seq),
  UNIQUE (session_id, id)
);

-- Compaction attempts. head is the frozen session record and memory (an
-- archiveHead); the frozen messages are rows of session_archive_messages.
CREATE TABLE session_archives (
  n             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- creation order
  id            text COLLATE "C" NOT NULL UNIQUE,
  session_id    text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  status        text NOT NULL CHECK (status IN ('prepared', 'succeeded', 'failed', 'interrupted')),
  cut_seq       bigint NOT NULL,
  message_count bigint NOT NULL,
  digest        text NOT NULL, -- hex SHA-256 of the store.ArchiveState JSON
  head          text NOT NULL,
  error         text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL,
  settled_at    timestamptz
);
CREATE INDEX session_archives_session ON session_archives (session_id, n);

CREATE TABLE session_archive_messages (
  archive_n  bigint NOT NULL REFERENCES session_archives (n) ON DELETE CASCADE,
  seq        bigint NOT NULL,
  session_id text NOT NULL,
  id         text NOT NULL,
  role       text NOT NULL,
  parts      text NOT NULL,
  metadata   text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (archive_n, seq)
);

-- An archive is frozen: only its status, error and settled time change.
CREATE FUNCTION session_archives_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id IS DISTINCT FROM OLD.id OR NEW.session_id IS DISTINCT FROM OLD.session_id
    OR NEW.cut_seq IS DISTINCT FROM OLD.cut_seq OR NEW.message_count IS DISTINCT FROM OLD.message_count
    OR NEW.digest IS DISTINCT FROM OLD.digest OR NEW.head IS DISTINCT FROM OLD.head
    OR NEW.created_at IS DISTINCT FROM OLD.created_at THEN
    RAISE EXCEPTION 'session archives are frozen';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER session_archives_frozen BEFORE UPDATE ON session_archives
  FOR EACH ROW EXECUTE FUNCTION session_archives_frozen();

CREATE FUNCTION session_archive_messages_frozen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'session archives are frozen';
END
$$;
CREATE TRIGGER session_archive_messages_frozen BEFORE UPDATE ON session_archive_messages
  FOR EACH ROW EXECUTE FUNCTION session_archive_messages_frozen();

-- The notification outbox: one row per event a person is told about,
-- keyed by the event's id, claimed by one sender at a time (FOR UPDATE
-- SKIP LOCKED) until claim_until, kept a while after it was sent.
CREATE TABLE notifications (
  id          text COLLATE "C" PRIMARY KEY,
  kind        text NOT NULL,
  payload     text NOT NULL,
  created_at  timestamptz NOT NULL,
  attempts    integer NOT NULL DEFAULT 0,
  next_at     timestamptz NOT NULL,
  last_error  text NOT NULL DEFAULT '',
  state       text NOT NULL DEFAULT 'pending', -- pending, sent, dropped
  claim       text NOT NULL DEFAULT '',
  claim_until timestamptz NOT NULL DEFAULT 'epoch',
  done_at     timestamptz -- sent or dropped
);
CREATE INDEX notifications_due ON notifications (state, next_at);
CREATE INDEX notifications_done ON notifications (state, done_at);

-- The audit trail of agent actions: a digest of the arguments, never the
-- arguments. Appends take turns (a transaction advisory lock), so seq
-- order is commit order and a reader paging by seq never skips one.
CREATE TABLE audit (
  seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at          timestamptz NOT NULL,
  principal   text NOT NULL,
  connection  text NOT NULL DEFAULT '',
  tool        text NOT NULL,
  args_digest text NOT NULL,
  outcome     text NOT NULL,
  subject     text NOT NULL DEFAULT ''
);
CREATE INDEX audit_at ON audit (at);
