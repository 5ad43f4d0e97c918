package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/internal/page"
	"github.com/cairnhq/cairn/store"
	"github.com/mark3labs/mcp-go/server"
)

func (s *Server) automations() (automationService, error) {
	if s.p.Automations == nil {
		return nil, &unavailableError{"automations"}
	}
	return s.p.Automations, nil
}

// ownerFor is whose automations a listing shows: the caller's own, or
// the owner asked for.
func (s *Server) ownerFor(ctx context.Context, explicit string) (string, error) {
	if explicit != "" {
		if err := validateID("owner", "owner", explicit); err != nil {
			return "", err
		}
		return explicit, nil
	}
	return string(s.principal(ctx)), nil
}

type listAutomationsIn struct {
	All    bool   `json:"all"`
	Owner  string `json:"owner"`
	Limit  int    `json:"limit"`
	Cursor string `json:"cursor"`
	budgetIn
}

type automationsOut struct {
	Owner       string        `json:"owner,omitempty"`
	Automations []*automation `json:"automations"`
	NextCursor  string        `json:"next_cursor,omitempty" jsonschema:"More automations follow: pass it back as cursor."`
}

func (s *Server) listAutomationsTool() server.ServerTool {
	return newTool("list_automations", "List automations",
		"List automations with their trigger, state and history (last start, last finish, last status, next due), by owner then key. By default only the ones this client created (owner agent:<client name>); all=true lists every automation, including a person's (owner human) and those declared in workflow files (owner config). "+
			"approval=pending marks one waiting for a person's approval (mcp-host automations approve KEY): it fires nothing until then. "+
			"Pages: pass next_cursor back as cursor to continue.",
		object(nil, withBudget(obj{
			"all":    boolean("List every automation, whoever owns it."),
			"owner":  idArg("List this owner's automations instead of the caller's."),
			"limit":  integer("Most automations to return (default 50).", 1, maxAutomationsPage),
			"cursor": cursorArg(),
		})),
		outputSchema[automationsOut](),
		hints{readOnly: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in listAutomationsIn) (*automationsOut, error) {
			as, err := s.automations()
			if err != nil {
				return nil, err
			}
			owner := ""
			if !in.All {
				if owner, err = s.ownerFor(ctx, in.Owner); err != nil {
					return nil, err
				}
			}
			after, err := parseAutomationCursor(in.Cursor)
			if err != nil {
				return nil, err
			}
			// The store pages by (owner, key): fetch one more than a page
			// to know whether more follow.
			limit := cmp.Or(in.Limit, 50)
			list, err := as.List(ctx, automations.ListParams{Owner: owner, After: after, Limit: limit + 1})
			if err != nil {
				return nil, err
			}
			window := make([]*automation, 0, len(list))
			for _, a := range list {
				window = append(window, s.automation(ctx, a))
			}
			page, next, err := page.Slice(window, automationKey, "", limit, in.room(),
				func(a *automation) string { return "automation " + a.ID })
			if err != nil {
				return nil, err
			}
			return &automationsOut{Owner: owner, Automations: page, NextCursor: next}, nil
		}))
}

type whenIn struct {
	Cron  *string  `json:"cron"`
	TZ    *string  `json:"tz"`
	Every *string  `json:"every"`
	Files []string `json:"files"`
	URL   *string  `json:"url"`
}

func (w whenIn) given() bool {
	return w.Cron != nil || w.TZ != nil || w.Every != nil || w.Files != nil || w.URL != nil
}

// when checks that the trigger arguments name exactly one kind.
func (w whenIn) when() (store.AutomationTrigger, error) {
	get := func(p *string) string {
		if p == nil {
			return ""
		}
		return strings.TrimSpace(*p)
	}
	aw := store.AutomationTrigger{Cron: get(w.Cron), TZ: get(w.TZ), Every: get(w.Every), URL: get(w.URL)}
	for _, g := range w.Files {
		if g = strings.TrimSpace(g); g != "" {
			aw.Files = append(aw.Files, g)
		}
	}
	kinds := 0
	for _, set := range []bool{aw.Cron != "", len(aw.Files) > 0, aw.URL != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds > 1:
		return aw, &argumentError{Name: "cron/files/url", Reason: "give only one trigger: cron, every, files or url"}
	case kinds == 0 && aw.Every == "":
		return aw, &argumentError{Name: "cron/every/files/url", Reason: `give a trigger: cron ("0 3 * * 1-5"), every ("30m"), files (["src/**/*.go"]) or url ("http://127.0.0.1:8080/health")`}
	case aw.TZ != "" && aw.Cron == "":
		return aw, &argumentError{Name: "tz", Reason: "tz applies to cron triggers only; give cron with it"}
	case aw.Cron != "" && aw.Every != "":
		return aw, &argumentError{Name: "every", Reason: "every is the interval of an every, files or url trigger, not of cron"}
	}
	return aw, nil
}

func triggerProps(p obj) obj {
	p["cron"] = str(`Cron expression, 5 fields ("0 3 * * 1-5" = 03:00 on weekdays).`, maxCronLen)
	p["tz"] = str(`IANA time zone of the cron expression ("Europe/Paris"); default: the machine's zone.`, maxTZLen)
	p["every"] = str(`Interval ("30m", "1h"): alone, fire that long after the previous run finished; with files or url, how often to poll.`, maxEveryLen)
	p["files"] = obj{
		"type": "array", "description": `Workspace-relative globs to watch (["src/**/*.go"]); fires when the matched files change.`,
		"minItems": 1, "maxItems": maxGlobs, "items": obj{"type": "string", "minLength": 1, "maxLength": maxGlobLen},
	}
	p["url"] = str("HTTP(S) URL to poll; fires when its body changes.", maxURLLen)
	return p
}

func policyProps(p obj) obj {
	p["overlap"] = enum("When a fire comes while the previous run still runs: skip (default), allow, or buffer_one.", "skip", "allow", "buffer_one")
	p["missed"] = enum("Fires missed while no mcp-host was running: skip (default) or once (one catch-up).", "skip", "once")
	return p
}

type createAutomationIn struct {
	Key     string          `json:"key"`
	Target  string          `json:"target"`
	Input   json.RawMessage `json:"input"`
	Owner   string          `json:"owner"`
	Overlap string          `json:"overlap"`
	Missed  string          `json:"missed"`
	whenIn
}

type createAutomationOut struct {
	Automation *automation `json:"automation"`
	Created    bool        `json:"created"`
}

func (s *Server) createAutomationTool() server.ServerTool {
	return newTool("create_automation", "Create an automation",
		"Create an automation that launches a target on a trigger: cron (with tz), every (interval after the previous completion), files (a glob, fires on change) or url (fires when the body changes). "+
			"It is owned by this client (mcp:<client name>) unless owner is given. Creating an existing key with the same spec returns the existing automation (created=false); a different spec is an error: use update_automation. "+
			"Automations fire only while an mcp-host process runs for this workspace.",
		object([]string{"key", "target"}, policyProps(triggerProps(obj{
			"key":    idArg("Your name for the automation, unique per owner."),
			"target": idArg("Workflow to launch."),
			"input":  openObject("Input object for each run."),
			"owner":  idArg("Not accepted: the owner is always the calling agent. Leave it out."),
		}))),
		outputSchema[createAutomationOut](),
		hints{idempotent: true},
		handler(func(ctx context.Context, _ *call, in createAutomationIn) (*createAutomationOut, error) {
			as, err := s.automations()
			if err != nil {
				return nil, err
			}
			if err := validateID("automation key", "key", in.Key); err != nil {
				return nil, err
			}
			if err := validateID("target name", "target", in.Target); err != nil {
				return nil, err
			}
			by := s.principal(ctx)
			if in.Owner != "" && in.Owner != string(by) {
				return nil, &access.RefusedError{Key: access.KeyEditOthers, Reason: fmt.Sprintf("an agent cannot choose the owner of an automation (asked for %q): it owns what it creates (%s); no setting changes that", in.Owner, by)}
			}
			when, err := in.when()
			if err != nil {
				return nil, err
			}
			if string(in.Input) == "null" {
				in.Input = nil
			}
			res, err := as.Create(ctx, automations.CreateParams{By: by, Spec: automations.Spec{
				Key: in.Key, Target: in.Target, Input: in.Input,
				Cron: when.Cron, TZ: when.TZ, Every: when.Every, Files: when.Files, URL: when.URL,
				Overlap: in.Overlap, Missed: in.Missed,
			}})
			if err != nil {
				return nil, err
			}
			noteSubject(ctx, res.Automation.ID)
			if res.Created {
				s.elicit.followApproval(ctx, res.Automation)
			}
			return &createAutomationOut{Automation: s.automation(ctx, res.Automation), Created: res.Created}, nil
		}))
}

type updateAutomationIn struct {
	ID      string          `json:"id"`
	Target  *string         `json:"target"`
	Input   json.RawMessage `json:"input"`
	Overlap *string         `json:"overlap"`
	Missed  *string         `json:"missed"`
	Enabled *bool           `json:"enabled"`
	Note    *string         `json:"note"`
	whenIn
}

func (s *Server) updateAutomationTool() server.ServerTool {
	return newTool("update_automation", "Update an automation",
		"Change an automation: pause it (enabled=false, with a note saying why) or resume it (enabled=true), change its target, input or policies, or replace its trigger (give cron, every, files or url, as for create_automation). Fields left out stay as they are.",
		object([]string{"id"}, policyProps(triggerProps(obj{
			"id":      idArg("The automation's id, as list_automations shows it."),
			"target":  idArg("New workflow to launch."),
			"input":   openObject("New input object for each run."),
			"enabled": boolean("false pauses the automation, true resumes it."),
			"note":    str("Why it was paused or changed; shown in listings.", maxNoteLen),
		}))),
		outputSchema[automation](),
		hints{destructive: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in updateAutomationIn) (*automation, error) {
			as, err := s.automationsFor(in.ID)
			if err != nil {
				return nil, err
			}
			noteSubject(ctx, in.ID)
			u := automations.UpdateParams{Ref: in.ID, By: s.principal(ctx), Target: in.Target, Overlap: in.Overlap, Missed: in.Missed, Enabled: in.Enabled, Note: in.Note}
			if in.Target != nil {
				if err := validateID("target name", "target", *in.Target); err != nil {
					return nil, err
				}
			}
			if len(in.Input) > 0 && string(in.Input) != "null" {
				u.Input = in.Input
			}
			if in.whenIn.given() {
				when, err := in.when()
				if err != nil {
					return nil, err
				}
				setTrigger(&u, when)
			}
			a, err := as.Update(ctx, u)
			if err != nil {
				return nil, err
			}
			s.elicit.followApproval(ctx, a)
			return s.automation(ctx, a), nil
		}))
}

// setTrigger makes u replace the automation's trigger with t.
func setTrigger(u *automations.UpdateParams, t store.AutomationTrigger) {
	switch {
	case t.Cron != "":
		u.Cron, u.TZ = &t.Cron, &t.TZ
	case len(t.Files) > 0:
		u.Files = t.Files
	case t.URL != "":
		u.URL = &t.URL
	}
	if t.Every != "" {
		u.Every = &t.Every
	}
}

type idIn struct {
	ID string `json:"id"`
}

func (s *Server) deleteAutomationTool() server.ServerTool {
	return newTool("delete_automation", "Delete an automation",
		"Delete an automation. Runs it already launched are not affected.",
		object([]string{"id"}, obj{"id": idArg("The automation's id.")}),
		outputSchema[deletedOut](),
		hints{destructive: true, idempotent: true},
		handler(func(ctx context.Context, _ *call, in idIn) (*deletedOut, error) {
			as, err := s.automationsFor(in.ID)
			if err != nil {
				return nil, err
			}
			noteSubject(ctx, in.ID)
			if _, err := as.Delete(ctx, automations.DeleteParams{Ref: in.ID, By: s.principal(ctx)}); err != nil {
				return nil, err
			}
			return &deletedOut{ID: in.ID, Deleted: true}, nil
		}))
}

func (s *Server) triggerAutomationTool() server.ServerTool {
	return newTool("trigger_automation", "Fire an automation now",
		"Fire an automation now, outside its schedule, as a manual fire recorded in its history. Its overlap policy applies: while its previous run is still going the fire may be skipped or buffered (outcome says which). When a run was queued it is returned; follow it with read_run_output or get_run. Paused automations cannot be fired.",
		object([]string{"id"}, obj{"id": idArg("The automation's id.")}),
		outputSchema[fire](),
		hints{destructive: true, openWorld: true},
		handler(func(ctx context.Context, _ *call, in idIn) (*fire, error) {
			as, err := s.automationsFor(in.ID)
			if err != nil {
				return nil, err
			}
			noteSubject(ctx, in.ID)
			rep, err := as.Trigger(ctx, automations.TriggerParams{Ref: in.ID, By: s.principal(ctx)})
			if err != nil {
				return nil, err
			}
			out := &fire{FireReport: *rep}
			if rep.RunID != "" && s.p.Runs != nil {
				if run, err := s.p.Runs.Get(ctx, rep.RunID); err == nil {
					out.Run = run
				}
			}
			s.subs.poke()
			return out, nil
		}))
}

// automationsFor is the automation service, for a call about the
// automation id (validated).
func (s *Server) automationsFor(id string) (automationService, error) {
	as, err := s.automations()
	if err != nil {
		return nil, err
	}
	return as, validateID("automation id", "id", id)
}
