-- The host processes alive on the workspace (store.Peer), on every
-- machine: each renews its row by heartbeat; a row past its expiry is a
-- peer that is gone, deleted by the next registration.
CREATE TABLE peers (
  id       text PRIMARY KEY,
  hostname text NOT NULL,
  pid      integer NOT NULL,
  started  timestamptz NOT NULL,
  since    timestamptz NOT NULL,
  renewed  timestamptz NOT NULL,
  expires  timestamptz NOT NULL
);
CREATE INDEX peers_expires ON peers (expires);
