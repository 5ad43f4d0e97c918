package locks

import (
	"strings"
	"testing"
	"time"
)

func TestParseStartTicks(t *testing.T) {
	t.Parallel()
	tail := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 20 21\n"
	for _, tc := range []struct {
		label, stat string
		want        uint64
		wantErr     bool
	}{
		{"plain", "1234 (mcp-host)" + tail, 424242, false},
		{"spaces and parens in name", "1234 (a) b (c) d)" + tail, 424242, false},
		{"no name", "1234 mcp-host" + tail, 0, true},
		{"short", "1234 (x) S 1 2 3", 0, true},
		{"not a number", "1234 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20", 0, true},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			got, err := parseStartTicks([]byte(tc.stat))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("parseStartTicks = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseBootTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		label, stat string
		want        time.Time
		wantErr     bool
	}{
		{"found", "cpu  1 2 3\nintr 5\nbtime 1764442800\nprocesses 9\n", time.Unix(1764442800, 0), false},
		{"missing", "cpu  1 2 3\n", time.Time{}, true},
		{"bad", "btime soon\n", time.Time{}, true},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			got, err := parseBootTime(strings.NewReader(tc.stat))
			if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
				t.Errorf("parseBootTime = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestTicksToTime(t *testing.T) {
	t.Parallel()
	boot := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	if got, want := ticksToTime(boot, 12345), boot.Add(123*time.Second+450*time.Millisecond); !got.Equal(want) {
		t.Errorf("ticksToTime = %v, want %v", got, want)
	}
}

func TestRecordGone(t *testing.T) {
	t.Parallel()
	me := self()
	if me.bootID == "" || me.startTicks == 0 {
		t.Skip("no /proc here")
	}
	now := time.Now()
	for _, tc := range []struct {
		label  string
		change func(*record)
		want   bool
	}{
		{"this process", func(*record) {}, false},
		{"earlier boot", func(r *record) { r.BootID = "other" }, true},
		{"pid reused", func(r *record) { r.StartTicks++ }, true},
		{"other host", func(r *record) { r.Host += ".elsewhere"; r.StartTicks++ }, false},
		{"no start time", func(r *record) { r.StartTicks = 0 }, false},
	} {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			r := newRecord(now)
			tc.change(&r)
			if got := r.gone(); got != tc.want {
				t.Errorf("gone() = %v, want %v", got, tc.want)
			}
		})
	}
}
