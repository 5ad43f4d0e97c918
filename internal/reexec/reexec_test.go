package reexec

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

const roleEnv = "CAIRN_REEXEC_TEST_CHILD"

func TestMain(m *testing.M) { Main(m, roleEnv, echo) }

// echo is the child role: it echoes each line back in upper case, after
// reporting its role, GORACE and its arguments.
func echo(role string) int {
	fmt.Println(role + "|" + os.Getenv("GORACE") + "|" + strings.Join(os.Args[1:], ","))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(strings.ToUpper(in.Text()))
	}
	return 0
}

func TestChildTalksAndExitsWithoutTheRaceSleep(t *testing.T) {
	t.Parallel()
	c := Start(t, Params{Env: []string{roleEnv + "=echo"}, Args: []string{"a", "b"}})
	if got := c.Line(t); !strings.HasPrefix(got, "echo|") || !strings.Contains(got, "atexit_sleep_ms=0") || !strings.HasSuffix(got, "|a,b") {
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

func TestSoakCountsOnlyUnderTheSoakEnv(t *testing.T) {
	t.Setenv(SoakEnv, "")
	if n := Soak(20, 200); n != 20 {
		t.Fatalf("Soak without %s = %d", SoakEnv, n)
	}
	t.Setenv(SoakEnv, "1")
	if n := Soak(20, 200); n != 200 {
		t.Fatalf("Soak with %s = %d", SoakEnv, n)
	}
}
