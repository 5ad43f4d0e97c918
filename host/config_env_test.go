package host

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestEnvPassSettings(t *testing.T) {
	t.Parallel()
	h := open(t, setup(t, "env:\n  pass: [GOPATH, SSH_AUTH_SOCK]\n"))
	if !slices.Equal(h.Settings.Env.Pass, []string{"GOPATH", "SSH_AUTH_SOCK"}) || !slices.Equal(h.Targets.EnvPass, h.Settings.Env.Pass) {
		t.Fatalf("env.pass: settings %v, fires %v", h.Settings.Env.Pass, h.Targets.EnvPass)
	}
	for name, tc := range map[string]struct{ config, want string }{
		"bad name":  {"env:\n  pass: [\"A-B\"]\n", `env.pass: "A-B" is not an environment variable name`},
		"twice":     {"env:\n  pass: [X, X]\n", "env.pass: X is listed twice"},
		"not list":  {"env:\n  pass: X\n", "config.yaml"},
		"bad field": {"env:\n  passs: [X]\n", "field passs not found"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Open(context.Background(), setup(t, tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
