-- Leases of the duties (scheduler, worker): who does one and until when
-- (store.Lease). A row is never deleted, so that its epoch only grows:
-- a released lease keeps it with an empty holder.
CREATE TABLE leases (
  name     TEXT PRIMARY KEY,
  holder   TEXT NOT NULL,
  pid      INTEGER NOT NULL,
  epoch    INTEGER NOT NULL,
  flocked  INTEGER NOT NULL,
  since    INTEGER NOT NULL, -- unix milliseconds
  renewed  INTEGER NOT NULL,
  expires  INTEGER NOT NULL
);
