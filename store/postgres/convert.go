package postgres

import (
	"encoding/json"
	"time"
)

// Conversions at the edge: zero times and empty JSON are stored as NULL,
// and times come back as UTC (pgx gives them in the local zone).

// nullTime stores a zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// timeOf reads a nullable time column; NULL is the zero time.
func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// nullJSON stores an empty raw message as NULL.
func nullJSON(m []byte) *string {
	if len(m) == 0 {
		return nil
	}
	s := string(m)
	return &s
}

// rawOf reads a nullable JSON text column; NULL is an empty message.
func rawOf(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// jsonText encodes v for a JSON text column; nil stays NULL.
func jsonText(v any) (*string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}
