-- Every committed write operation, by id, so that an operation whose
-- commit outcome was unknown can be looked up after a reopen.
CREATE TABLE operations (
  id   TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  at   INTEGER NOT NULL -- unix milliseconds
) WITHOUT ROWID;
