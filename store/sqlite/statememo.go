package sqlite

import (
	"encoding/json"
	"sync"

	"github.com/cairnhq/cairn/store"
)

// stateMemo remembers automation states by their JSON text. A batch of
// fires reads back the states this store wrote last (the previous batch,
// or the pass that recorded the next due time), and decoding a thousand of
// them is a good share of the batch. It maps a text to its decoding,
// whoever wrote the text and whether or not the write that produced it
// committed, so it can never give a state other than the one the database
// holds; a text it does not know is decoded. Each Store has its own (the
// zero value is ready), so stores in one process share nothing.

// stateMemoMax bounds the memo; past it, it starts over.
const stateMemoMax = 1 << 14

// stateMemo is safe for concurrent use.
type stateMemo struct {
	mu sync.Mutex
	m  map[string]store.AutomationState
}

// decode returns the state text encodes.
func (m *stateMemo) decode(text string) (store.AutomationState, error) {
	m.mu.Lock()
	st, ok := m.m[text]
	m.mu.Unlock()
	if ok {
		st.Pending = st.Pending.Clone()
		return st, nil
	}
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		return store.AutomationState{}, err
	}
	m.put(text, st)
	return st, nil
}

// put remembers that text encodes st.
func (m *stateMemo) put(text string, st store.AutomationState) {
	st.Pending = st.Pending.Clone()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[string]store.AutomationState)
	}
	if len(m.m) >= stateMemoMax {
		clear(m.m)
	}
	m.m[text] = st
}
