package reexec

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

const roleEnv = "CAIRN_REEXEC_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "echo" {
		// Echo each line back in upper case; report GORACE and the args.
		fmt.Println(os.Getenv("GORACE") + "|" + strings.Join(os.Args[1:], ","))
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			fmt.Println(strings.ToUpper(in.Text()))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestChildTalksAndExitsWithoutTheRaceSleep(t *testing.T) {
	t.Parallel()
	c := Start(t, Params{Env: []string{roleEnv + "=echo"}, Args: []string{"a", "b"}})
	if got := c.Line(t); !strings.Contains(got, "atexit_sleep_ms=0") || !strings.HasSuffix(got, "|a,b") {
		t.Fatalf("child reported %q", got)
	}
	c.Say(t, "hello")
	if got := c.Line(t); got != "HELLO" {
		t.Fatalf("child echoed %q", got)
	}
	c.Stdin.Close()
	if err := c.Cmd.Wait(); err != nil {
		t.Fatal(err)
	}
}
