package automations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/internal/text"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/workflows"
)

// Default poll periods of monitors without `every`.
const (
	DefaultFilesEvery = 10 * time.Second
	DefaultHTTPEvery  = 60 * time.Second
)

// MaxGlobs bounds the globs of one files monitor.
const MaxGlobs = 16

// Spec is what a person or an agent writes to create an automation: a
// target, its input, and exactly one trigger: Cron (with TZ), Every alone
// (an interval), Files or URL (monitors, polled every Every).
type Spec struct {
	Key    string          `json:"key"`
	Target string          `json:"target"`
	Input  json.RawMessage `json:"input,omitempty"`

	Cron  string   `json:"cron,omitempty"`
	TZ    string   `json:"tz,omitempty"`
	Every string   `json:"every,omitempty"`
	Files []string `json:"files,omitempty"`
	URL   string   `json:"url,omitempty"`

	Overlap string `json:"overlap,omitempty"` // skip (default), allow, buffer_one
	Missed  string `json:"missed,omitempty"`  // skip (default), once
	// Enabled defaults to true; a disabled automation carries Note.
	Enabled *bool  `json:"enabled,omitempty"`
	Note    string `json:"note,omitempty"`
}

// ErrInvalidSpec is wrapped by every *SpecError.
var ErrInvalidSpec = errors.New("invalid automation")

// SpecError refuses an automation spec; it names the field.
type SpecError struct {
	Field string // "cron", "files", "url", ...
	Err   error
}

func (e *SpecError) Error() string { return fmt.Sprintf("invalid %s: %v", e.Field, e.Err) }

func (e *SpecError) Unwrap() []error { return []error{ErrInvalidSpec, e.Err} }

func specErr(field string, err error) error { return &SpecError{Field: field, Err: err} }

func specErrf(field, format string, args ...any) error {
	return &SpecError{Field: field, Err: fmt.Errorf(format, args...)}
}

// normalized is a checked spec in the form the store keeps.
type normalized struct {
	trigger store.AutomationTrigger
	input   json.RawMessage
	overlap string
	missed  string
}

// normalize checks everything in sp that does not need the target
// catalogue and returns the stored form. The trigger's strings are
// canonical, so two specs that mean the same thing compare equal.
func normalize(sp Spec) (normalized, error) {
	var n normalized
	if err := ids.Validate("automation key", sp.Key); err != nil {
		return n, specErr("key", err)
	}
	if err := ids.Validate("target", sp.Target); err != nil {
		return n, specErr("target", err)
	}
	trig, err := normalizeTrigger(sp.Cron, sp.TZ, sp.Every, sp.Files, sp.URL)
	if err != nil {
		return n, err
	}
	n.trigger = trig
	if n.input, err = normalizeInput(sp.Input); err != nil {
		return n, err
	}
	switch sp.Overlap {
	case "", store.OverlapSkip:
		n.overlap = store.OverlapSkip
	case store.OverlapAllow, store.OverlapBufferOne:
		n.overlap = sp.Overlap
	default:
		return n, specErrf("overlap", "%q: use skip, allow or buffer_one", text.Shorten(sp.Overlap, maxShown))
	}
	m, err := schedule.ParseMissedPolicy(sp.Missed)
	if err != nil {
		return n, specErr("missed", err)
	}
	n.missed = string(m)
	return n, nil
}

// normalizeTrigger builds a trigger from the flags a person gives.
func normalizeTrigger(cron, tz, every string, files []string, url string) (store.AutomationTrigger, error) {
	var t store.AutomationTrigger
	var kinds []string
	if cron != "" {
		kinds = append(kinds, "cron")
	}
	if len(files) > 0 {
		kinds = append(kinds, "files")
	}
	if url != "" {
		kinds = append(kinds, "url")
	}
	switch {
	case len(kinds) > 1:
		return t, specErrf("trigger", "give one of cron, every, files or url, not both %s and %s", kinds[0], kinds[1])
	case len(kinds) == 0 && every == "":
		return t, specErrf("trigger", "give one of cron, every, files or url")
	case tz != "" && cron == "":
		return t, specErrf("tz", "applies only to cron triggers")
	}
	switch {
	case cron != "":
		if every != "" {
			return t, specErrf("every", "a cron trigger has no interval; give one of cron or every")
		}
		c, err := schedule.ParseCron(cron, tz)
		if err != nil {
			if errors.Is(err, schedule.ErrUnknownZone) {
				return t, specErr("tz", err)
			}
			return t, specErr("cron", err)
		}
		return store.AutomationTrigger{Kind: store.TriggerCron, Cron: c.Spec(), TZ: c.Zone()}, nil
	case len(files) > 0:
		t.Kind = store.TriggerFiles
		if len(files) > MaxGlobs {
			return t, specErrf("files", "%d globs; at most %d", len(files), MaxGlobs)
		}
		for _, g := range files {
			clean, err := CheckGlob(g)
			if err != nil {
				return t, specErr("files", err)
			}
			t.Files = append(t.Files, clean)
		}
	case url != "":
		t.Kind = store.TriggerHTTP
		if err := workflows.CheckURL(url); err != nil {
			return t, specErr("url", err)
		}
		t.URL = strings.TrimSpace(url)
	default:
		t.Kind = store.TriggerInterval
	}
	d, err := parseEvery(t.Kind, every)
	if err != nil {
		return t, err
	}
	t.Every = FormatEvery(d)
	return t, nil
}

func parseEvery(kind, every string) (time.Duration, error) {
	if every == "" {
		switch kind {
		case store.TriggerFiles:
			return DefaultFilesEvery, nil
		case store.TriggerHTTP:
			return DefaultHTTPEvery, nil
		}
	}
	d, err := schedule.ParseEvery(every)
	if err != nil {
		return 0, specErr("every", err)
	}
	return d, nil
}

// FormatEvery writes an interval the short way: 30s, 10m, 1h30m, 24h.
func FormatEvery(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// every returns a trigger's interval (validated when it was stored).
func every(t store.AutomationTrigger) time.Duration {
	d, err := parseEvery(t.Kind, t.Every)
	if err != nil {
		return DefaultFilesEvery
	}
	return d
}

// CheckGlob checks a workspace-relative glob: not empty, not absolute, no
// ".." component, no NUL, valid pattern syntax ("**" matches any number
// of folders). It returns the cleaned, slash-separated glob.
func CheckGlob(g string) (string, error) {
	switch {
	case strings.TrimSpace(g) == "":
		return "", errors.New("a glob must not be empty")
	case strings.ContainsRune(g, 0):
		return "", errors.New("a glob must not contain a NUL byte")
	case len(g) > 1024:
		return "", errors.New("a glob is longer than 1024 bytes")
	case strings.HasPrefix(g, "/") || strings.HasPrefix(g, `\`) || filepath.IsAbs(g) || filepath.VolumeName(g) != "":
		return "", fmt.Errorf("%q is absolute; write it relative to the workspace", text.Shorten(g, maxShown))
	}
	for _, c := range strings.FieldsFunc(g, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." {
			return "", fmt.Errorf("%q leaves the workspace (has a \"..\" component)", text.Shorten(g, maxShown))
		}
	}
	clean := path.Clean(strings.ReplaceAll(g, `\`, "/"))
	for _, seg := range strings.Split(clean, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return "", fmt.Errorf("bad glob %q: %w", text.Shorten(g, maxShown), err)
		}
	}
	return clean, nil
}

// normalizeInput checks that in is a JSON object (empty means {}) and
// compacts it.
func normalizeInput(in json.RawMessage) (json.RawMessage, error) {
	t := bytes.TrimSpace(in)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]any
	if err := json.Unmarshal(t, &obj); err != nil || obj == nil {
		return nil, specErrf("input", "must be a JSON object, like {\"who\":\"world\"}")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, specErr("input", err)
	}
	return json.RawMessage(b.Bytes()), nil
}

// sameJSON reports whether two JSON documents have equal values.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

// diffSpec lists how an existing automation differs from a wanted one.
func diffSpec(a *store.Automation, n normalized, target string) []string {
	var d []string
	if a.Target != target {
		d = append(d, fmt.Sprintf("target %q, not %q", a.Target, target))
	}
	if !a.Trigger.Equal(n.trigger) {
		d = append(d, fmt.Sprintf("trigger %s, not %s", Describe(a.Trigger), Describe(n.trigger)))
	}
	if !sameJSON(a.Input, n.input) {
		d = append(d, fmt.Sprintf("input %s, not %s", a.Input, n.input))
	}
	if a.Overlap != n.overlap {
		d = append(d, fmt.Sprintf("overlap %s, not %s", a.Overlap, n.overlap))
	}
	if a.Missed != n.missed {
		d = append(d, fmt.Sprintf("missed %s, not %s", a.Missed, n.missed))
	}
	return d
}

// Describe writes a trigger the way people read it: "cron 0 3 * * 1-5
// (Europe/Paris)", "every 30m", "files src/**/*.go every 10s", "http
// http://127.0.0.1:8080/health every 1m".
func Describe(t store.AutomationTrigger) string {
	switch t.Kind {
	case store.TriggerCron:
		if t.TZ != "" {
			return fmt.Sprintf("cron %s (%s)", t.Cron, t.TZ)
		}
		return "cron " + t.Cron
	case store.TriggerInterval:
		return "every " + t.Every
	case store.TriggerFiles:
		return fmt.Sprintf("files %s every %s", strings.Join(t.Files, ","), t.Every)
	case store.TriggerHTTP:
		return fmt.Sprintf("http %s every %s", t.URL, t.Every)
	}
	return t.Kind
}

// maxShown is how many runes of a user's string an error message quotes.
const maxShown = 60
