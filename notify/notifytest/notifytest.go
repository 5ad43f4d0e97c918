// Package notifytest is a webhook endpoint for tests of notifications.
package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/cairnhq/cairn/notify"
)

// Webhook accepts notification documents on URL, each with the
// Idempotency-Key the sender gives it, and refuses anything else.
type Webhook struct {
	URL  string               // the endpoint, .../hook
	Got  chan notify.Document // each document accepted, in order
	hits atomic.Int64
}

// NewWebhook starts a Webhook, closed when the test ends.
func NewWebhook(t testing.TB) *Webhook {
	t.Helper()
	w := &Webhook{Got: make(chan notify.Document, 64)}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var d notify.Document
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := json.Unmarshal(b, &d); err != nil || r.Header.Get("Idempotency-Key") != d.ID+"/webhook" {
			http.Error(rw, "bad document", http.StatusBadRequest)
			return
		}
		w.hits.Add(1)
		w.Got <- d
	}))
	t.Cleanup(srv.Close)
	w.URL = srv.URL + "/hook"
	return w
}

// Hits is how many documents it accepted.
func (w *Webhook) Hits() int64 { return w.hits.Load() }
