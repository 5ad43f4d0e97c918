package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/cairnhq/cairn/store"
)

// permanentError is a failure that no retry mends (a 4xx answer, no
// notify-send): the row is dropped at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// channelOf is the channel a row's id ends with.
func channelOf(id string) string {
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		return id[i+1:]
	}
	return ""
}

// deliver sends row n over its channel.
func (b *Outbox) deliver(ctx context.Context, n *store.Notification) error {
	switch ch := channelOf(n.ID); ch {
	case ChannelWebhook:
		if b.settings.Webhook == nil {
			return &permanentError{errors.New("notify.webhook is no longer configured")}
		}
		return b.webhook(ctx, n)
	case ChannelDesktop:
		return desktop(ctx, n.Payload)
	default:
		return &permanentError{fmt.Errorf("unknown channel %q", ch)}
	}
}

// webhook POSTs the row's document, with Idempotency-Key: the row id.
func (b *Outbox) webhook(ctx context.Context, n *store.Notification) error {
	w := b.settings.Webhook
	ctx, cancel := context.WithTimeout(ctx, w.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(n.Payload))
	if err != nil {
		return &permanentError{fmt.Errorf("build webhook request: %w", err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cairn-mcp-host")
	req.Header.Set("Idempotency-Key", n.ID)
	if w.Header != "" {
		name, value, err := w.header()
		if err != nil {
			return &permanentError{err}
		}
		req.Header.Set(name, value)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) //nolint:errcheck // the status says it all
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("post webhook: HTTP %d", resp.StatusCode)
	default:
		return &permanentError{fmt.Errorf("post webhook: HTTP %d (not retried)", resp.StatusCode)}
	}
}

// newClient is the webhook client: no redirects (a 3xx is an answer).
func newClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// desktop shows the document's title and text with notify-send (Linux)
// or osascript (macOS).
func desktop(ctx context.Context, payload []byte) error {
	var d Document
	if err := json.Unmarshal(payload, &d); err != nil {
		return &permanentError{fmt.Errorf("read notification: %w", err)}
	}
	tool, args := "notify-send", []string{"--app-name=Cairn", d.Title, d.Text}
	if runtime.GOOS == "darwin" {
		q := func(s string) string { return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"` }
		tool, args = "osascript", []string{"-e", "display notification " + q(d.Text) + " with title " + q(d.Title)}
	}
	path, err := exec.LookPath(tool)
	if err != nil {
		return &permanentError{fmt.Errorf("desktop notification: %s is not on PATH", tool)}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, path, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("desktop notification: %s: %w: %s", tool, err, clip(strings.TrimSpace(string(out)), 512))
	}
	return nil
}
