-- The host processes alive on the workspace (store.Peer), whatever
-- machine they run on: each renews its row by heartbeat; a row past its
-- expiry is a peer that is gone, deleted by the next registration.
CREATE TABLE peers (
  id       TEXT PRIMARY KEY,
  hostname TEXT NOT NULL,
  pid      INTEGER NOT NULL,
  started  INTEGER NOT NULL, -- unix milliseconds
  since    INTEGER NOT NULL,
  renewed  INTEGER NOT NULL,
  expires  INTEGER NOT NULL
);
CREATE INDEX peers_expires ON peers (expires);
