package store

// SessionStore keeps sessions, their messages and compaction archives.
type SessionStore interface{}
