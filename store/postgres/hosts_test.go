package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

// Several hosts are several stores (each its own pool, see peers) on one
// workspace: what one host's single writer guaranteed in store/sqlite,
// row locks and constraints guarantee here.

// onEachHost runs fn(host, i) for every host at once and fails t with the
// first error.
func onEachHost(t *testing.T, hosts []*Store, fn func(s *Store, i int) error) {
	t.Helper()
	errs := make(chan error, len(hosts))
	var wg sync.WaitGroup
	for i, s := range hosts {
		wg.Go(func() { errs <- fn(s, i) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestHostsFireEachSlotOnce: three hosts fire the same slots of the same
// automations at once, in batches and one by one; every slot queues one
// run.
func TestHostsFireEachSlotOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hosts := peers(t, 3)
	const autos, slots = 12, 4
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range autos {
		a := &store.Automation{ID: fmt.Sprintf("aut_%02d", i), Key: fmt.Sprintf("k%02d", i), Owner: "human", Target: "hello",
			Trigger: store.AutomationTrigger{Kind: store.TriggerCron, Cron: "* * * * *", TZ: "UTC"}, Enabled: true, Overlap: store.OverlapAllow}
		if err := hosts[i%3].CreateAutomation(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	queued := map[string]int{} // automation/slot -> runs queued
	onEachHost(t, hosts, func(s *Store, h int) error {
		for k := 1; k <= slots; k++ {
			nominal := t0.Add(time.Duration(k) * time.Minute)
			var ps []store.FireParams
			for i := range autos {
				id := fmt.Sprintf("aut_%02d", (i+h*5)%autos) // each host in its own order
				ps = append(ps, store.FireParams{AutomationID: id, Nominal: nominal, Actual: nominal,
					Run: &store.Run{ID: fmt.Sprintf("run_%d_%s_%d", h, id, k), Target: "hello", Literals: json.RawMessage(`{}`)}})
			}
			var results []store.FireResult
			if h == 2 {
				for _, p := range ps {
					res, err := s.Fire(ctx, p)
					if err != nil {
						return err
					}
					results = append(results, res)
				}
			} else {
				outs, err := s.FireMany(ctx, ps)
				if err != nil {
					return err
				}
				for _, o := range outs {
					if o.Err != nil {
						return o.Err
					}
					results = append(results, o.Result)
				}
			}
			mu.Lock()
			for _, r := range results {
				if !r.AlreadyFired {
					queued[fmt.Sprintf("%s/%d", r.Fire.AutomationID, k)]++
				}
			}
			mu.Unlock()
		}
		return nil
	})
	if len(queued) != autos*slots {
		t.Fatalf("%d slots queued a run, want %d", len(queued), autos*slots)
	}
	for slot, n := range queued {
		if n != 1 {
			t.Errorf("slot %s queued %d runs", slot, n)
		}
	}
	if c, err := hosts[0].Counts(ctx); err != nil || c.Runs != autos*slots {
		t.Fatalf("counts %+v, %v; want %d runs", c, err, autos*slots)
	}
	for i := range autos {
		a, err := hosts[1].GetAutomation(ctx, fmt.Sprintf("aut_%02d", i))
		if err != nil || a.State.Fires != slots || !a.State.Cursor.Equal(t0.Add(slots*time.Minute)) {
			t.Fatalf("automation %d: %+v, %v", i, a, err)
		}
	}
}

// TestHostsAppendToOneSession: two hosts append to one session at once;
// every message is kept once, numbered without gaps, each host's in its
// order.
func TestHostsAppendToOneSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hosts := peers(t, 2)
	if _, err := hosts[0].CreateSession(ctx, &store.Session{ID: "ses_shared"}); err != nil {
		t.Fatal(err)
	}
	const each = 60
	onEachHost(t, hosts, func(s *Store, h int) error {
		for i := range each {
			parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": fmt.Sprintf("%d-%d", h, i)}})
			if _, err := s.AppendMessages(ctx, "ses_shared", []*store.Message{{Role: store.RoleUser, Parts: parts}}); err != nil {
				return err
			}
		}
		return nil
	})
	msgs, err := hosts[1].ListMessages(ctx, store.ListMessagesParams{SessionID: "ses_shared", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2*each {
		t.Fatalf("%d messages, want %d", len(msgs), 2*each)
	}
	next := [2]int{}
	for i, m := range msgs {
		var parts []struct{ Text string }
		if err := json.Unmarshal(m.Parts, &parts); err != nil || len(parts) != 1 {
			t.Fatalf("message %d: %s", i, m.Parts)
		}
		var h, n int
		fmt.Sscanf(parts[0].Text, "%d-%d", &h, &n)
		if m.Seq != int64(i+1) || n != next[h] {
			t.Fatalf("message %d (seq %d) is %s, want %d-%d", i, m.Seq, parts[0].Text, h, next[h])
		}
		next[h]++
	}
	if sess, err := hosts[0].GetSession(ctx, "ses_shared"); err != nil || sess.MessageCount != 2*each || sess.LastSeq != 2*each {
		t.Fatalf("session %+v, %v", sess, err)
	}
}

// TestHostsClaimEachNotificationOnce: two hosts claim from one outbox at
// once; no notification is claimed twice, and all are claimed.
func TestHostsClaimEachNotificationOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hosts := peers(t, 2)
	const n = 40
	for i := range n {
		if _, err := hosts[i%2].EnqueueNotification(ctx, &store.Notification{ID: fmt.Sprintf("ev%02d", i), Kind: "run.failed", Payload: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Add(time.Second)
	var mu sync.Mutex
	claimed := map[string]int{}
	onEachHost(t, hosts, func(s *Store, h int) error {
		for {
			got, err := s.ClaimNotifications(ctx, store.ClaimNotificationsParams{Claim: fmt.Sprintf("host%d", h), Now: now, Lease: time.Minute, Limit: 3})
			if err != nil || len(got) == 0 {
				return err
			}
			mu.Lock()
			for _, note := range got {
				claimed[note.ID]++
			}
			mu.Unlock()
		}
	})
	if len(claimed) != n {
		t.Fatalf("%d notifications claimed, want %d", len(claimed), n)
	}
	for id, k := range claimed {
		if k != 1 {
			t.Errorf("%s claimed %d times", id, k)
		}
	}
}
