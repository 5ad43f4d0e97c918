package automations

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/automations/schedule"
	"github.com/cairnhq/cairn/store"
)

// pendingNote is the note of an automation waiting for approval.
func pendingNote(a *store.Automation, by access.Principal) string {
	return fmt.Sprintf("waiting for approval (by %s): mcp-host automations approve %s", by, a.Key)
}

// admit applies the agents: policy to an automation an agent creates: its
// target must be one agents may launch, its owner limits hold, and under
// approve it is stored pending (disabled until approved).
func (s *Service) admit(ctx context.Context, by access.Principal, a *store.Automation) error {
	if !by.IsAgent() || s.Policy == nil {
		return nil
	}
	if err := s.Policy.CanLaunch(by, a.Target); err != nil {
		return err
	}
	owned := 0
	if s.Policy.MaxAutomations > 0 {
		list, err := s.Store.ListAutomations(ctx, store.AutomationFilter{Owner: a.Owner})
		if err != nil {
			return err
		}
		owned = len(list)
	}
	pending, err := s.Policy.CheckAutomation(by, access.AutomationCheck{New: true, Owned: owned, Interval: shortestGap(a.Trigger, s.now())})
	if err != nil {
		return err
	}
	if pending {
		a.Enabled, a.Approval, a.Note = false, store.ApprovalPending, pendingNote(a, by)
	}
	return nil
}

// admitChange applies the policy to an agent's change of cur into next: a
// new target or trigger is checked as a create is, and under approve it
// makes the automation pending again. An agent cannot enable a pending
// automation.
func (s *Service) admitChange(by access.Principal, cur, next *store.Automation) error {
	if !by.IsAgent() {
		if next.Enabled && cur.Approval == store.ApprovalPending {
			return fmt.Errorf("automation %s waits for approval: mcp-host automations approve %s", cur.Key, cur.Key)
		}
		return nil
	}
	rescheduled := next.Target != cur.Target || !next.Trigger.Equal(cur.Trigger)
	if rescheduled {
		if err := s.Policy.CanLaunch(by, next.Target); err != nil {
			return err
		}
		pending, err := s.Policy.CheckAutomation(by, access.AutomationCheck{Interval: shortestGap(next.Trigger, s.now())})
		if err != nil {
			return err
		}
		if pending {
			next.Enabled, next.Approval, next.Note = false, store.ApprovalPending, pendingNote(next, by)
			return nil
		}
	}
	if next.Enabled && next.Approval == store.ApprovalPending {
		return &access.RefusedError{Key: access.KeyAutomations, Reason: fmt.Sprintf("automation %s waits for a person's approval (mcp-host automations approve %s)", cur.Key, cur.Key)}
	}
	return nil
}

// shortestGap is the least time between two fires of t: the interval or
// poll period, or for cron the shortest gap among its next fires after
// now (0 when it cannot be told).
func shortestGap(t store.AutomationTrigger, now time.Time) time.Duration {
	if t.Kind != store.TriggerCron {
		every, err := schedule.ParseEvery(t.Every)
		if err != nil || t.Every == "" {
			switch t.Kind {
			case store.TriggerFiles:
				return DefaultFilesEvery
			case store.TriggerHTTP:
				return DefaultHTTPEvery
			}
			return 0
		}
		return every
	}
	c, err := schedule.ParseCron(t.Cron, t.TZ)
	if err != nil {
		return 0
	}
	var least time.Duration
	prev := c.Next(now)
	for range 16 {
		next := c.Next(prev)
		if next.IsZero() {
			break
		}
		if gap := next.Sub(prev); least == 0 || gap < least {
			least = gap
		}
		prev = next
	}
	return least
}

// Approve lets a pending automation fire: it is enabled, and fires from
// its next due time on (what passed while it waited is not caught up).
func (s *Service) Approve(ctx context.Context, ref string) (*store.Automation, error) {
	a, err := s.Resolve(ctx, ref, "")
	if err != nil {
		return nil, fmt.Errorf("approve automation: %w", err)
	}
	if a.Approval != store.ApprovalPending {
		return nil, fmt.Errorf("approve automation %s: it is not waiting for approval", a.Key)
	}
	var out *store.Automation
	err = s.withEditLock(a, func() error {
		cur, err := s.Store.GetAutomation(ctx, a.ID)
		if err != nil {
			return err
		}
		next := store.CloneAutomation(cur)
		next.Approval, next.Enabled, next.Note, next.UpdatedAt = "", true, "", s.now()
		if err := s.Store.UpdateAutomation(ctx, next, cur.Revision); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("approve automation %s: %w", a.Key, err)
	}
	s.notify()
	return out, nil
}

// Reject deletes a pending automation: a new one, or one whose change
// waited (the agent may create it again).
func (s *Service) Reject(ctx context.Context, ref string) (*store.Automation, error) {
	a, err := s.Resolve(ctx, ref, "")
	if err != nil {
		return nil, fmt.Errorf("reject automation: %w", err)
	}
	if a.Approval != store.ApprovalPending {
		return nil, fmt.Errorf("reject automation %s: it is not waiting for approval (delete it instead)", a.Key)
	}
	return s.Delete(ctx, DeleteParams{Ref: a.ID, Revision: a.Revision})
}

// keepWithinLimit undoes the create of a when it took its owner past
// limit: creates at the same moment (other processes, other machines)
// each counted the automations before inserting, so each looks again
// after. The owner's first limit automations, by creation time then id,
// stay; a later one is deleted and refused.
func (s *Service) keepWithinLimit(ctx context.Context, a *store.Automation, limit int) error {
	list, err := s.Store.ListAutomations(ctx, store.AutomationFilter{Owner: a.Owner})
	if err != nil {
		return err
	}
	slices.SortFunc(list, func(x, y *store.Automation) int {
		return cmp.Or(x.CreatedAt.Compare(y.CreatedAt), cmp.Compare(x.ID, y.ID))
	})
	rank := slices.IndexFunc(list, func(x *store.Automation) bool { return x.ID == a.ID })
	if rank < limit {
		return nil
	}
	if err := s.Store.DeleteAutomation(ctx, a.ID, 0); err != nil {
		return fmt.Errorf("undo a create past %s: %w", access.KeyMaxAutomations, err)
	}
	return &access.RefusedError{Key: access.KeyMaxAutomations, Reason: fmt.Sprintf("%s owns %d automations, the most allowed", a.Owner, limit)}
}
