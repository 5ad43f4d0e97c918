package workflows

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"strings"

	"gopkg.in/yaml.v3"
)

var triggerKeys = []string{"cron", "tz", "every", "files", "http"}

// CheckURL reports whether s is a URL a workflow may call or poll: http or
// https, with a host and without credentials (put secrets in headers, not
// in the URL, which is shown in listings and journals). The engine calls it
// on rendered URLs; Parse calls it on literal ones.
func CheckURL(s string) error {
	if strings.ContainsAny(s, "\x00\r\n") {
		return errors.New("bad URL: must not contain control characters")
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("bad URL %q: %w", shorten(s), errors.Unwrap(err))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("bad URL %q: must start with http:// or https://", shorten(s))
	case u.Host == "":
		return fmt.Errorf("bad URL %q: no host", shorten(s))
	case u.User != nil:
		return fmt.Errorf("bad URL %q (credentials removed): must not hold credentials (user:password@); send them in a header", shorten(redact(u)))
	}
	return nil
}

// redact shows a URL without its credentials.
func redact(u *url.URL) string {
	return u.Scheme + "://" + u.Host + u.EscapedPath()
}

func (p *parser) triggers(n *yaml.Node) []Trigger {
	if n.Kind != yaml.SequenceNode {
		p.failf(n.Line, "on", "expected a list of triggers like [{cron: \"0 3 * * *\"}], got %s", kindName(n))
		return nil
	}
	var out []Trigger
	for i, c := range n.Content {
		if t, ok := p.trigger(c, fmt.Sprintf("on[%d]", i)); ok {
			out = append(out, t)
		}
	}
	return out
}

func (p *parser) trigger(n *yaml.Node, field string) (Trigger, bool) {
	t := Trigger{Line: n.Line}
	m, ok := p.mapping(n, field, triggerKeys)
	if !ok {
		return t, false
	}
	var kinds []string
	for _, k := range []string{"cron", "files", "http"} {
		if _, ok := m[k]; ok {
			kinds = append(kinds, k)
		}
	}
	switch {
	case len(kinds) > 1:
		p.failf(n.Line, field, "has both %s and %s; use one trigger per entry", kinds[0], kinds[1])
		return t, false
	case len(kinds) == 1:
		t.Kind = TriggerKind(kinds[0])
	case m["every"].val != nil:
		t.Kind = TriggerEvery
	default:
		p.failf(n.Line, field, "needs one of cron, every, files, http")
		return t, false
	}
	good := true
	if e, ok := m["tz"]; ok && t.Kind != TriggerCron {
		p.failf(e.key.Line, field, "`tz` applies only to cron triggers")
		good = false
	}
	if e, ok := m["every"]; ok {
		if t.Kind == TriggerCron {
			p.failf(e.key.Line, field, "has both cron and every; use one trigger per entry")
			good = false
		} else if d, ok := p.duration(e.val, join(field, "every"), false); ok {
			t.Every = d
		} else {
			good = false
		}
	}
	switch t.Kind {
	case TriggerCron:
		s, ok := p.nonEmpty(m["cron"].val, join(field, "cron"))
		t.Cron = strings.TrimSpace(s)
		good = good && ok
		if e, ok := m["tz"]; ok {
			s, ok := p.nonEmpty(e.val, join(field, "tz"))
			t.TZ = strings.TrimSpace(s)
			good = good && ok
		}
	case TriggerFiles:
		t.Files, ok = p.globs(m["files"].val, join(field, "files"))
		good = good && ok
	case TriggerHTTP:
		f := join(field, "http")
		s, ok := p.nonEmpty(m["http"].val, f)
		if ok {
			if err := CheckURL(s); err != nil {
				p.fail(m["http"].val.Line, f, err)
				ok = false
			}
		}
		t.URL = strings.TrimSpace(s)
		good = good && ok
	}
	return t, good
}

// globs reads `files:`, one glob or a list, each relative to the workspace.
func (p *parser) globs(n *yaml.Node, field string) ([]string, bool) {
	var raw []string
	var lines []int
	if n.Kind == yaml.SequenceNode {
		list, ok := p.strList(n, field)
		if !ok {
			return nil, false
		}
		if len(list) == 0 {
			p.failf(n.Line, field, "must not be empty")
			return nil, false
		}
		raw = list
		for _, c := range n.Content {
			lines = append(lines, c.Line)
		}
	} else {
		s, ok := p.str(n, field)
		if !ok {
			return nil, false
		}
		raw, lines = []string{s}, []int{n.Line}
	}
	out := make([]string, 0, len(raw))
	ok := true
	for i, g := range raw {
		clean, err := relPath(g)
		if err == nil {
			if _, merr := path.Match(clean, ""); merr != nil {
				err = fmt.Errorf("bad glob %q: %w", shorten(g), merr)
			}
		}
		if err != nil {
			p.fail(lines[i], field, err)
			ok = false
			continue
		}
		out = append(out, clean)
	}
	return out, ok
}
