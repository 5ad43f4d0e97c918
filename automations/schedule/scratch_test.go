package schedule

import (
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestScratchNative(t *testing.T) {
	cases := []struct{ zone, spec string; from time.Time }{
		{"America/New_York", "30 2 * * *", time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)},
		{"America/New_York", "30 1 * * *", time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC)},
		{"America/New_York", "30 * * * *", time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC)},
		{"America/New_York", "30 * * * *", time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC)},
		{"Europe/London", "30 1 * * *", time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC)},
		{"Europe/London", "30 1 * * *", time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)},
		{"Australia/Lord_Howe", "15 2 * * *", time.Date(2026, 10, 3, 13, 0, 0, 0, time.UTC)},
		{"Australia/Lord_Howe", "45 1 * * *", time.Date(2026, 4, 4, 13, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		s, err := cron.ParseStandard("CRON_TZ=" + c.zone + " " + c.spec)
		if err != nil { t.Fatal(err) }
		n := c.from
		out := ""
		for i := 0; i < 4; i++ { n = s.Next(n); out += " " + n.Format("01-02 15:04 MST") }
		t.Logf("%s %q:%s", c.zone, c.spec, out)
	}
	for _, bad := range []string{"TZ=", "CRON_TZ=", "TZ=Europe/Paris", "TZ=x", "CRON_TZ= 0 * * * *"} {
		func() {
			defer func() { if r := recover(); r != nil { t.Logf("%q panics: %v", bad, r) } }()
			s, err := cron.ParseStandard(bad)
			t.Logf("%q -> %v %v", bad, s, err)
			if s != nil { t.Logf("loc %v", s.(*cron.SpecSchedule).Location) }
		}()
	}
}
