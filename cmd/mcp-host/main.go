// Command mcp-host is Cairn: a local host for durable agent work, speaking
// the Model Context Protocol. See `mcp-host --help`.

// GOMAXPROCS is set once at start: the runtime's check of the CPU quota
// every second would wake every idle mcp-host (editors start one per
// window) for a limit that does not change under a desktop.
//
//go:debug updatemaxprocs=0
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "time/tzdata" // IANA zones for automations on machines without zone files

	"github.com/cairnhq/cairn/cmd/mcp-host/cli"
)

// main is never reached in the step supervisor's hidden mode: the runs
// package, which every mcp-host links, checks for it in its init, before
// main, and runs the supervisor instead (see runs' package doc).
func main() {
	syscall.Umask(0o077) // state files 0600, folders 0700
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
