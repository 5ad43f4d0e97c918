// Package notify tells a person when something needs them: a run waiting
// for an answer, a run that failed, an automation paused by errors. Each
// event becomes one outbox row per channel (a desktop notification, a
// webhook POST), written with the event's own store write and keyed by
// the event's id, and an Outbox loop in every started host delivers the
// rows it claims, retrying with backoff: sent once, even across crashes.
package notify

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The events a person can be told about; Settings.Events names them
// without the "run."/"automation." prefix.
const (
	EventRunWaiting       = "run.waiting"
	EventRunFailed        = "run.failed"
	EventAutomationPaused = "automation.paused"
)

var eventNames = map[string]string{"waiting": EventRunWaiting, "failed": EventRunFailed, "paused": EventAutomationPaused}

// Settings is the notify: section of .cairn/config.yaml.
type Settings struct {
	// Events are the events sent: waiting, failed, paused; empty: all.
	Events []string `yaml:"events"`
	// Desktop shows a desktop notification (notify-send on Linux,
	// osascript on macOS, when on PATH).
	Desktop bool             `yaml:"desktop"`
	Webhook *WebhookSettings `yaml:"webhook"`
}

// WebhookSettings is notify.webhook: a POST of the event's JSON document.
type WebhookSettings struct {
	URL string `yaml:"url"`
	// Header is one extra request header, "Name: value" (a token, say).
	Header  string   `yaml:"header"`
	Timeout Duration `yaml:"timeout"` // per attempt; 0: DefaultTimeout
}

// DefaultTimeout bounds one webhook attempt.
const DefaultTimeout = 10 * time.Second

// Duration is a Go duration in YAML ("10s").
type Duration time.Duration

// UnmarshalYAML reads a Go duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration (write 10s, 1m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// Enabled reports whether any channel is configured.
func (s Settings) Enabled() bool { return s.Desktop || s.Webhook != nil }

// Wants reports whether event (EventRunFailed, ...) is sent.
func (s Settings) Wants(event string) bool {
	if !s.Enabled() {
		return false
	}
	if len(s.Events) == 0 {
		return true
	}
	for _, e := range s.Events {
		if eventNames[e] == event {
			return true
		}
	}
	return false
}

// Validate refuses settings that cannot work, saying what to write.
func (s Settings) Validate() error {
	for _, e := range s.Events {
		if _, ok := eventNames[e]; !ok {
			return fmt.Errorf("notify.events: unknown event %q; use waiting, failed or paused", e)
		}
	}
	w := s.Webhook
	if w == nil {
		return nil
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("notify.webhook.url %q: write an http or https URL", w.URL)
	}
	if u.User != nil {
		return fmt.Errorf("notify.webhook.url: no user:password@ in the URL; send a token with notify.webhook.header")
	}
	if w.Header != "" {
		if _, _, err := w.header(); err != nil {
			return err
		}
	}
	if time.Duration(w.Timeout) > 5*time.Minute {
		return fmt.Errorf("notify.webhook.timeout is %s; use at most 5m", time.Duration(w.Timeout))
	}
	return nil
}

// header splits Header into a name and a value.
func (w *WebhookSettings) header() (name, value string, err error) {
	name, value, ok := strings.Cut(w.Header, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
		return "", "", fmt.Errorf("notify.webhook.header: write one header as \"Name: value\"")
	}
	return name, value, nil
}

func (w *WebhookSettings) timeout() time.Duration {
	if w.Timeout == 0 {
		return DefaultTimeout
	}
	return time.Duration(w.Timeout)
}
