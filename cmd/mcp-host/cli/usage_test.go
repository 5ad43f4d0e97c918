package cli

import (
	"strings"
	"testing"
)

// Every wrong command line exits 2 with the usage, whichever layer (cobra,
// pflag or a command) noticed it; usage errors are recognised by type.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	c := newCLIWS(t, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "mcp-host"`},
		{[]string{"sessions", "bogus"}, `unknown command "bogus" for "mcp-host sessions"`},
		{[]string{"runs", "--bogus"}, "unknown flag: --bogus"},
		{[]string{"runs", "--limit", "x"}, `invalid argument "x"`},
		{[]string{"runs", "show"}, "takes 1 argument(s), got 0"},
		{[]string{"--log-level", "loud", "runs"}, `--log-level "loud"`},
	} {
		code, _, errOut := c.run(tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d with %q and the usage", tc.args, code, errOut, ExitUsage, tc.want)
		}
	}
	if code, out, _ := c.run(); code != ExitOK || !strings.Contains(out, "Available Commands") {
		t.Errorf("no arguments: exit %d, %q; want the help", code, out)
	}
}
