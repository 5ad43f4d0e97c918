package automations

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/store"
)

func TestNextDueWithoutAScheduler(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 3, 2, 7, 30, 0, 500e6, time.UTC) // a Monday
	now := created.Add(10 * time.Minute)
	cron := func(expr, tz string) store.AutomationTrigger {
		return store.AutomationTrigger{Kind: store.TriggerCron, Cron: expr, TZ: tz}
	}
	for name, tc := range map[string]struct {
		a    store.Automation
		want time.Time
		zone string
	}{
		"cron in Paris": {a: store.Automation{Trigger: cron("0 9 * * *", "Europe/Paris")},
			want: time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC), zone: "Europe/Paris"},
		"cron with a CRON_TZ prefix": {a: store.Automation{Trigger: cron("CRON_TZ=Asia/Tokyo 0 18 * * *", "")},
			want: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), zone: "Asia/Tokyo"},
		"interval from creation, rounded up": {a: store.Automation{Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1h"}},
			want: time.Date(2026, 3, 2, 8, 30, 1, 0, time.UTC), zone: "Local"},
		"interval measured from the last finish": {a: store.Automation{Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1m"},
			State: store.AutomationState{LastRunID: "run_x", LastStart: created, LastFinish: created.Add(2 * time.Minute)}},
			want: created.Add(3 * time.Minute).Truncate(time.Second).Add(time.Second), zone: "Local"},
		"interval in flight: at the earliest every after now": {a: store.Automation{Trigger: store.AutomationTrigger{Kind: store.TriggerInterval, Every: "1m"},
			State: store.AutomationState{LastRunID: "run_x", LastStart: created.Add(time.Minute)}},
			want: time.Date(2026, 3, 2, 7, 41, 1, 0, time.UTC), zone: "Local"},
		"a monitor never polled is due now": {a: store.Automation{Trigger: store.AutomationTrigger{Kind: store.TriggerFiles, Files: []string{"x"}, Every: "10s"}},
			want: now.Truncate(time.Second), zone: "Local"},
		"paused": {a: store.Automation{Trigger: cron("0 9 * * *", "UTC"), Note: "x"}, zone: "UTC"},
	} {
		a := tc.a
		a.CreatedAt = created
		a.Enabled = name != "paused"
		if got := NextDue(&a, now); !got.Equal(tc.want) {
			t.Errorf("%s: NextDue = %v, want %v", name, got, tc.want)
		}
		if loc := Location(&a); loc.String() != tc.zone {
			t.Errorf("%s: Location = %s, want %s", name, loc, tc.zone)
		}
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	if got := ZonedTime(time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC), paris); got != "2026-03-02 09:00:00 CET UTC+01:00" {
		t.Errorf("ZonedTime = %q", got)
	}
}
