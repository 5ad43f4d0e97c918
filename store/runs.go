package store

// RunStore keeps runs: their records, literals, ledgers and questions.
type RunStore interface{}
