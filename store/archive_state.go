package store

import (
	"encoding/json"
	"io"
)

// WriteArchiveState writes the JSON of ArchiveState{sess, messages,
// memory}, the very bytes json.Marshal gives (and Archive.Digest is taken
// over), taking the messages from each as they come: a backend freezes or
// reads back a session of any length holding one message at a time. each
// calls yield for every message in order; yield does not keep m.
func WriteArchiveState(w io.Writer, sess Session, memory string, each func(yield func(m *Message) error) error) error {
	head, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	if err := writeAll(w, []byte(`{"session":`), head, []byte(`,"messages":[`)); err != nil {
		return err
	}
	sep := []byte{}
	err = each(func(m *Message) error {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		err = writeAll(w, sep, b)
		sep = []byte{','}
		return err
	})
	if err != nil {
		return err
	}
	if err := writeAll(w, []byte{']'}); err != nil {
		return err
	}
	if memory != "" {
		mem, err := json.Marshal(memory)
		if err != nil {
			return err
		}
		if err := writeAll(w, []byte(`,"memory":`), mem); err != nil {
			return err
		}
	}
	return writeAll(w, []byte{'}'})
}

func writeAll(w io.Writer, bs ...[]byte) error {
	for _, b := range bs {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}
