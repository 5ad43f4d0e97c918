-- Run journals kept in the database (store.JournalStore), so that any
-- host follows any run: a journal's size and when it last grew, and its
-- chunks by byte offset. An append grows the journals row (its row lock
-- orders concurrent appenders) and inserts the chunk at the old size, in
-- one statement.
CREATE TABLE journals (
  run_id     text PRIMARY KEY,
  size       bigint NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX journals_updated ON journals (updated_at);
CREATE TABLE journal_chunks (
  run_id text NOT NULL,
  off    bigint NOT NULL,
  data   bytea NOT NULL,
  PRIMARY KEY (run_id, off)
);

-- Compaction's memory files (store.MemoryFileStore), per attempt: the
-- session's memory is the row of the attempt its summary names.
CREATE TABLE memory_files (
  session_id text NOT NULL,
  archive_id text NOT NULL,
  body       text NOT NULL,
  PRIMARY KEY (session_id, archive_id)
);
