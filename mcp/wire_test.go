package mcp

import (
	"testing"
	"time"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/workflows"
)

// TestDescribeTrigger checks that a workflow file's trigger reads as the
// automation it declares does (automations.Describe), poll defaults
// included.
func TestDescribeTrigger(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		in   workflows.Trigger
		want string
	}{
		{"cron", workflows.Trigger{Kind: workflows.TriggerCron, Cron: "0 3 * * 1-5"}, "cron 0 3 * * 1-5"},
		{"cron with zone", workflows.Trigger{Kind: workflows.TriggerCron, Cron: "0 3 * * *", TZ: "Europe/Paris"}, "cron 0 3 * * * (Europe/Paris)"},
		{"every", workflows.Trigger{Kind: workflows.TriggerEvery, Every: 30 * time.Minute}, "every 30m"},
		{"files", workflows.Trigger{Kind: workflows.TriggerFiles, Files: []string{"src/**/*.go", "go.mod"}, Every: 10 * time.Second}, "files src/**/*.go,go.mod every 10s"},
		{"files, default poll", workflows.Trigger{Kind: workflows.TriggerFiles, Files: []string{"a"}}, "files a every " + automations.FormatEvery(automations.DefaultFilesEvery)},
		{"http", workflows.Trigger{Kind: workflows.TriggerHTTP, URL: "http://127.0.0.1:8080/health", Every: time.Minute}, "http http://127.0.0.1:8080/health every 1m"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := describeTrigger(c.in); got != c.want {
				t.Errorf("describeTrigger = %q, want %q", got, c.want)
			}
		})
	}
}
