-- Principals: people are "human" (was "cli"), agents "agent:<client>"
-- (was "mcp:<client>"). An agent's automation may wait for approval.
ALTER TABLE automations ADD COLUMN approval TEXT NOT NULL DEFAULT '';
UPDATE OR IGNORE automations SET owner = 'human' WHERE owner = 'cli';
UPDATE OR IGNORE automations SET owner = 'agent:' || substr(owner, 5) WHERE owner LIKE 'mcp:%';

-- The audit trail of agent actions: a digest of the arguments, never the
-- arguments. Retention deletes it by age, with the runs.
CREATE TABLE audit (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  at          INTEGER NOT NULL, -- unix milliseconds
  principal   TEXT NOT NULL,
  connection  TEXT NOT NULL DEFAULT '',
  tool        TEXT NOT NULL,
  args_digest TEXT NOT NULL,
  outcome     TEXT NOT NULL,
  subject     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_at ON audit (at);
