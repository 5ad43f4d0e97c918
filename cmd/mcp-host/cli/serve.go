package cli

import (
	"context"
	"errors"
	"fmt"

	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/locks"
	"github.com/cairnhq/cairn/mcp"
	"github.com/cairnhq/cairn/mcp/transport"
	"github.com/cairnhq/cairn/workspace"
)

// serveOptions are serve's flags.
type serveOptions struct {
	http        string
	tokenFile   string
	allowRemote bool
}

// serveCommands: serve.
func (e *env) serveCommands() []*cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP to an agent client over stdio (or streamable HTTP with --http)",
		Long: `Serve the Model Context Protocol for this workspace: tools to launch and follow
runs, answer their questions, and manage automations and sessions, plus the
resources cairn://runs/{id} and cairn://runs/{id}/output.

By default it speaks over stdin and stdout, as MCP clients (Claude Code, Claude
Desktop, Cursor, VS Code) start it; stdout carries the protocol only and logs
go to stderr. With --http 127.0.0.1:PORT it serves streamable HTTP at /mcp
instead, on loopback unless --allow-remote is given (which needs --token-file).

serve is a full peer: it executes the runs it launches, adopts runs whose
process died, and fires automations while it holds the scheduler lock. When its
client goes away (stdin closed, SIGTERM) while runs are still going, it stops
taking work, lets go of its runs within 2 seconds (steps in flight go on under
their supervisors) and starts a background "mcp-host worker" unless one runs,
which takes the runs over, so they finish.`,
		Example: `  claude mcp add cairn -- mcp-host serve
  mcp-host serve --http 127.0.0.1:8765 --token-file ~/.cairn/token`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.http, "http", "", "serve streamable HTTP at ADDR (host:port, e.g. 127.0.0.1:8765; port 0 picks one) instead of stdio")
	f.StringVar(&o.tokenFile, "token-file", "", "with --http: require the bearer token in FILE (mode 0600)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "with --http: allow a non-loopback address (requires --token-file)")
	return []*cobra.Command{cmd}
}

// serveStopGrace is how long a serve whose client went away (stdin
// closed, SIGTERM) lets a step in flight finish before it lets go of its
// run: the step goes on under its supervisor and the worker that adopts
// the run takes its result. Clients kill a server a few seconds after
// closing its stdin (the TypeScript SDK after 4 s), and serve exits
// within 2 s.
const serveStopGrace = 500 * time.Millisecond

// mcpHost is what serve runs: the workspace's host and the MCP server
// over it.
type mcpHost struct {
	*host.Host
	srv *mcp.Server
}

func (e *env) serve(ctx context.Context, o serveOptions) error {
	if o.http == "" && (o.tokenFile != "" || o.allowRemote) {
		return usagef("--token-file and --allow-remote go with --http")
	}
	var token string
	if o.tokenFile != "" {
		t, err := readToken(o.tokenFile)
		if err != nil {
			return err
		}
		token = t
	}
	listen := transport.ListenParams{Addr: o.http, AllowRemote: o.allowRemote, HTTPOptions: transport.HTTPOptions{Token: token}}
	if o.http != "" {
		if _, err := transport.ResolveListenAddr(listen); err != nil {
			return usagef("%v", err)
		}
	}

	h, err := e.openHost(ctx)
	if err != nil {
		return err
	}
	defer h.close(e)

	if err := h.start(ctx); err != nil {
		return err
	}

	var serveErr error
	if o.http != "" {
		listen.Ready = func(addr net.Addr) {
			fmt.Fprintf(e.stdio.Err, "mcp-host: serving MCP at http://%s%s for %s\n", addr, transport.HTTPPath, h.Workspace.Root)
		}
		serveErr = h.srv.ServeHTTP(ctx, listen)
	} else {
		out := e.stdio.Out
		if f, ok := out.(*os.File); ok && f.Fd() == 1 {
			// stdout carries the protocol only: the transport writes to a
			// duplicate of fd 1, and fd 1 now points at stderr.
			proto, err := transport.RedirectStdout()
			if err != nil {
				return err
			}
			defer proto.Close()
			out = proto
		}
		e.log.Info("serving MCP over stdio", "workspace", h.Workspace.Root, "pid", os.Getpid())
		serveErr = h.srv.ServeStdio(ctx, e.stdio.In, out)
	}
	if errors.Is(serveErr, context.Canceled) && ctx.Err() != nil {
		serveErr = nil // a signal: a normal end
	}
	h.handOff(e)
	return serveErr
}

// readToken reads a bearer token file, refusing one others can read.
func readToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("read token file %s: it is readable by others (mode %v); chmod 600 it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("read token file %s: it is empty", path)
	}
	return token, nil
}

// openHost opens the workspace's host and builds the MCP server over it.
// Nothing runs yet.
func (e *env) openHost(ctx context.Context) (*mcpHost, error) {
	var srv *mcp.Server
	h, err := e.open(ctx, true, func(c *host.Config) {
		c.StopGrace = serveStopGrace
		c.OnRunChange = func(id string) {
			if srv != nil {
				srv.RunChanged(id)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	srv = mcp.New(mcp.Params{
		Version:     version(),
		Runs:        h.Runs,
		RunStore:    h.Store,
		Sessions:    h.Sessions,
		Automations: h.Automations,
		Log:         e.log,
	})
	return &mcpHost{Host: h, srv: srv}, nil
}

// start runs the resource watcher and the host's loops.
func (h *mcpHost) start(ctx context.Context) error {
	if err := h.srv.Start(ctx); err != nil {
		return err
	}
	return h.Start(ctx)
}

// handOff makes sure runs still going when serve ends are finished by a
// background worker: it starts one (unless one runs already) before this
// process releases its runs, which the worker then adopts.
func (h *mcpHost) handOff(e *env) {
	if h.InMemory() {
		if n := h.Runs.Executing(); n > 0 {
			e.log.Warn("dry run: runs still executing are dropped", "runs", n)
		}
		return
	}
	ctx := context.Background()
	busy, err := h.Runs.Busy(ctx)
	if err != nil {
		e.log.Warn("check for unfinished runs", "err", err)
		busy = h.Runs.Executing() > 0
	}
	if !busy {
		return
	}
	pid, err := startWorker(e, h.Workspace)
	switch {
	case err != nil:
		fmt.Fprintf(e.stdio.Err, "mcp-host: runs are still going and no worker could be started (%v); any mcp-host process for this workspace will resume them\n", err)
	case pid > 0:
		e.log.Info("handed unfinished runs to a background worker", "worker_pid", pid, "executing", h.Runs.Executing())
	default:
		e.log.Info("a worker is running: it adopts the unfinished runs", "executing", h.Runs.Executing())
	}
}

// close stops the loops (runs in flight are released for the worker to
// adopt), then the MCP server, then closes the store.
func (h *mcpHost) close(e *env) {
	h.Stop()
	h.srv.Close()
	if err := h.Close(); err != nil {
		e.log.Warn("close host", "err", err)
	}
}

// startWorker starts a background `mcp-host worker` for the workspace
// unless one holds locks/worker already (then it returns pid 0). The
// worker runs in its own session, detached from serve's client, with
// stdin from /dev/null and its output appended to the workspace's
// worker.log.
func startWorker(e *env, ws *workspace.Workspace) (int, error) {
	if _, held, err := locks.Describe(ws.LocksDir(), "worker"); err == nil && held {
		return 0, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find the mcp-host executable: %w", err)
	}
	root, err := e.stateRoot()
	if err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(ws.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("open worker log: %w", err)
	}
	defer logf.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "--state", root, "--workspace", ws.Root, "--log-level", e.logLevel, "worker")
	cmd.Dir = ws.Root
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start mcp-host worker: %w", err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Release()
	return pid, nil
}
