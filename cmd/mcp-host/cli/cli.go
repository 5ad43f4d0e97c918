// Package cli is mcp-host's command line: every subcommand, its flags and
// its output, human by default and JSON with --json. It calls the same
// domain packages as the MCP adapter and holds no domain logic itself.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/workspace"
)

// Version is set at build time with -ldflags "-X .../cmd/mcp-host/cli.Version=v1.2.3".
var Version = ""

// Exit codes scripts can rely on.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and failed (a failed run, a refused input)
	ExitUsage   = 2 // the command line was wrong
)

// Stdio is where a command reads and writes.
type Stdio struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// env is what every command shares: global flags and resolved paths.
type env struct {
	stdio     Stdio
	stateFlag string
	wsFlag    string
	json      bool
	dryRun    bool
	logLevel  string
	log       *slog.Logger
}

// usageError is a wrong command line: exit 2 with the usage.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError ends a command with a specific code and, if set, a message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// Main runs mcp-host with args (without the program name) and returns the
// process exit code.
func Main(ctx context.Context, args []string, stdio Stdio) int {
	e := &env{stdio: stdio}
	root := e.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ue *usageError
	var ee *exitError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stdio.Err, "mcp-host: %v\n\n%s", err, cmd.UsageString())
		return ExitUsage
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintf(stdio.Err, "mcp-host: %v\n", ee.err)
		}
		return ee.code
	default:
		fmt.Fprintf(stdio.Err, "mcp-host: %v\n", err)
		return ExitFailure
	}
}

func (e *env) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "mcp-host",
		Short: "Cairn: a local host for durable agent work, over MCP",
		Long: `Cairn runs the workflows you define in .cairn/workflows/ durably, fires your
automations, keeps agent sessions, and serves all of it to agent clients over
the Model Context Protocol (mcp-host serve).

State lives under the state root (--state, CAIRN_STATE, default ~/.cairn), one
folder per workspace; many mcp-host processes can share it safely.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		// Runnable, so that an unknown command is our usage error rather
		// than one of cobra's untyped ones; alone, it prints the help.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return e.setup()
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err.Error()} })
	f := root.PersistentFlags()
	f.StringVar(&e.stateFlag, "state", "", "state root folder (env CAIRN_STATE, default ~/.cairn)")
	f.StringVar(&e.wsFlag, "workspace", "", "workspace folder (default: nearest ancestor holding .cairn/, else the working directory)")
	f.BoolVar(&e.json, "json", false, "print JSON instead of text")
	f.BoolVar(&e.dryRun, "dry-run", false, "keep all state in memory; write nothing under the state root")
	f.StringVar(&e.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")

	root.AddCommand(e.versionCommand(), e.statusCommand(), e.backupCommand(), e.gcCommand(), e.secretsCommand(), e.serviceCommand())
	root.AddCommand(e.auditCommand())
	for _, group := range [][]*cobra.Command{e.runCommands(), e.automationCommands(), e.sessionCommands(), e.serveCommands()} {
		root.AddCommand(group...)
	}
	return root
}

func (e *env) setup() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(e.logLevel)); err != nil {
		return usagef("--log-level %q: use debug, info, warn or error", e.logLevel)
	}
	e.log = slog.New(slog.NewTextHandler(e.stdio.Err, &slog.HandlerOptions{Level: level}))
	return nil
}

// stateRoot resolves --state, then CAIRN_STATE, then ~/.cairn.
func (e *env) stateRoot() (string, error) {
	root := e.stateFlag
	if root == "" {
		root = os.Getenv("CAIRN_STATE")
	}
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the state root: %w (set --state or CAIRN_STATE)", err)
		}
		root = filepath.Join(home, ".cairn")
	}
	return filepath.Abs(root)
}

// workspace resolves the current workspace without creating anything.
func (e *env) workspace() (*workspace.Workspace, error) {
	root, err := e.stateRoot()
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find the working directory: %w", err)
	}
	return host.ResolveWorkspace(cwd, e.wsFlag, root) // a workspace_id names its state folder
}

// open opens the current workspace's host (see host.Open): write says the
// command runs or changes something; opts adjust the host's config.
func (e *env) open(ctx context.Context, write bool, opts ...func(*host.Config)) (*host.Host, error) {
	root, err := e.stateRoot()
	if err != nil {
		return nil, err
	}
	cfg := host.Config{StateRoot: root, Workspace: e.wsFlag, DryRun: e.dryRun, Write: write, Logger: e.log}
	for _, opt := range opts {
		opt(&cfg)
	}
	return host.Open(ctx, cfg)
}

// withHost opens the workspace's host for one command (see open), runs fn
// and closes the host.
func (e *env) withHost(ctx context.Context, write bool, fn func(*host.Host) error) error {
	h, err := e.open(ctx, write)
	if err != nil {
		return err
	}
	defer h.Close()
	return fn(h)
}

// printJSON writes v as indented JSON to stdout.
func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdio.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (e *env) printf(format string, args ...any) { fmt.Fprintf(e.stdio.Out, format, args...) }

func (e *env) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of mcp-host",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version()
			if e.json {
				return e.printJSON(map[string]string{"version": v})
			}
			e.printf("mcp-host %s\n", v)
			return nil
		},
	}
}

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// noArgs, exactArgs and rangeArgs are cobra argument checks that report a
// usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error { return exactArgs(0)(cmd, args) }

func exactArgs(n int) cobra.PositionalArgs { return rangeArgs(n, n) }

func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			if lo == hi {
				return usagef("%s takes %d argument(s), got %d", cmd.CommandPath(), lo, len(args))
			}
			return usagef("%s takes %d to %d arguments, got %d", cmd.CommandPath(), lo, hi, len(args))
		}
		return nil
	}
}
