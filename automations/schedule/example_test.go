package schedule_test

import (
	"fmt"
	"time"

	"github.com/cairnhq/cairn/automations/schedule"
)

func ExampleCron_Next() {
	c, err := schedule.ParseCron("30 2 * * *", "America/New_York")
	if err != nil {
		fmt.Println(err)
		return
	}
	// 02:30 does not exist on 2026-03-08: it fires when the clock jumps to 03:00.
	t := time.Date(2026, 3, 7, 12, 0, 0, 0, c.Location())
	for range 2 {
		t = c.Next(t)
		fmt.Println(t.Format(time.RFC3339))
	}
	// Output:
	// 2026-03-08T03:00:00-04:00
	// 2026-03-09T02:30:00-04:00
}

func ExampleParseCron_errors() {
	_, err := schedule.ParseCron("0 0 30 2 *", "")
	fmt.Println(err)
	_, err = schedule.ParseCron("0 3 * * *", "Mars/Base")
	fmt.Println(err)
	// Output:
	// parse cron "0 0 30 2 *": cron spec never fires: no date matches its day-of-month and month fields
	// parse cron "0 3 * * *": unknown time zone "Mars/Base"
}

func ExampleDue() {
	c, _ := schedule.ParseCron("0 * * * *", "UTC")
	// The last slot fired was 10:00; the machine slept until 14:30.
	r := schedule.Due(c, schedule.DueParams{
		LastNominal: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		Now:         time.Date(2026, 5, 1, 14, 30, 0, 0, time.UTC),
		Policy:      schedule.MissedOnce,
	})
	fmt.Println("fire:", r.Fire.Format(time.RFC3339), "catch-up:", r.CatchUp)
	fmt.Println("missed:", r.Missed, "next:", r.Next.Format(time.RFC3339))
	// Output:
	// fire: 2026-05-01T14:00:00Z catch-up: true
	// missed: 3 next: 2026-05-01T15:00:00Z
}

func ExampleNextInterval() {
	r := schedule.NextInterval(schedule.IntervalParams{
		Every:      30 * time.Minute,
		LastStart:  time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
		LastFinish: time.Date(2026, 5, 1, 10, 4, 0, 0, time.UTC),
		Now:        time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	})
	fmt.Println(r.Nominal.Format(time.RFC3339), r.Due, r.Missed)
	// Output:
	// 2026-05-01T10:34:00Z true 2
}
