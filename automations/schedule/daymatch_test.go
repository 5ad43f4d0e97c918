package schedule

import (
	"testing"
	"time"
)

// TestDayFieldsWithStarSteps pins the documented combination of the day
// fields, checked against robfig/cron's parser: "*/N" with N over 1 is
// restricted (OR with the other day field), "*" and "*/1" are stars (AND).
func TestDayFieldsWithStarSteps(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) // a Sunday
	for _, tc := range []struct {
		spec string
		want []int // the next days of March 2026
	}{
		{"0 0 */2 * 1", []int{2, 3, 5, 7, 9, 11}},    // odd days, and Mondays (not Vixie's AND)
		{"0 0 1-31/2 * 1", []int{2, 3, 5, 7, 9, 11}}, // the same, written as a range
		{"0 0 */1 * 1", []int{2, 9, 16}},             // a step of 1 keeps the star: Mondays
		{"0 0 */2 * *", []int{3, 5, 7}},              // both stars: odd days
		{"0 0 15 * 1", []int{2, 9, 15, 16}},          // the 15th, and Mondays
		{"0 0 * * 1", []int{2, 9, 16}},               // a star day of month: Mondays
		{"0 0 ? * 1", []int{2, 9, 16}},               // "?" is a star too
		{"0 0 1-31 * 1", []int{2, 3, 4, 5}},          // a full range is restricted: every day
	} {
		c, err := ParseCron(tc.spec, "UTC")
		if err != nil {
			t.Fatal(err)
		}
		at := from
		for i, day := range tc.want {
			at = c.Next(at)
			if at.Month() != time.March || at.Day() != day {
				t.Fatalf("%q: fire %d on %v, want March %d", tc.spec, i, at.Format(time.DateOnly), day)
			}
		}
	}
}
