package cli

import (
	"context"
	"errors"
	"fmt"

	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/mcp"
	"github.com/cairnhq/cairn/mcp/transport"
)

// serveOptions are serve's flags.
type serveOptions struct {
	http        string
	tokenFile   string
	allowRemote bool
	noAuth      bool
	addToken    string
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
HTTP clients need a bearer token: the first serve --http creates one in
http-tokens under the state root (mode 0600) and prints the line that
configures a client; --add-token NAME adds one per client ("NAME TOKEN" lines,
each client a principal), --no-auth serves loopback clients without one.

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
	f.BoolVar(&o.noAuth, "no-auth", false, "with --http on loopback: serve without a bearer token")
	f.StringVar(&o.addToken, "add-token", "", "with --http: add a token for the client NAME to the state root's http-tokens file and print it")
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
	if o.http == "" && (o.tokenFile != "" || o.allowRemote || o.noAuth || o.addToken != "") {
		return usagef("--token-file, --allow-remote, --no-auth and --add-token go with --http")
	}
	if o.noAuth && (o.tokenFile != "" || o.addToken != "" || o.allowRemote) {
		return usagef("--no-auth serves loopback clients without a token: not with --token-file, --add-token or --allow-remote")
	}
	if o.tokenFile != "" && o.addToken != "" {
		return usagef("--add-token adds to the state root's http-tokens file: edit your --token-file instead")
	}
	listen := transport.ListenParams{Addr: o.http, AllowRemote: o.allowRemote, HTTPOptions: transport.HTTPOptions{NoAuth: o.noAuth}}
	if o.http != "" {
		// The address alone: a remote one needs --token-file (read below).
		check := listen
		check.NoAuth = o.tokenFile == ""
		if !check.NoAuth {
			check.Token = "from --token-file"
		}
		if _, err := transport.ResolveListenAddr(check); err != nil {
			return usagef("%v", err)
		}
	}
	var toks *httpTokens
	if o.http != "" && !o.noAuth {
		var err error
		if toks, err = e.httpTokens(o); err != nil {
			return err
		}
		listen.NoAuth, listen.Tokens = false, toks.tokens
	}

	h, err := e.openHost(ctx)
	if err != nil {
		return err
	}
	defer h.close(e)

	if err := h.start(ctx); err != nil {
		return err
	}
	ctx, stopServing := h.UntilFailed(ctx) // a vanished database ends serve with its error
	defer stopServing()
	for _, w := range host.WorkflowWarnings(h.Runs.Targets(), "") {
		e.log.Warn("workflow: " + w)
	}

	var serveErr error
	if o.http != "" {
		listen.Ready = func(addr net.Addr) {
			url := fmt.Sprintf("http://%s%s", addr, transport.HTTPPath)
			fmt.Fprintf(e.stdio.Err, "mcp-host: serving MCP at %s for %s\n", url, h.Workspace.Root)
			toks.announce(e.stdio.Err, url)
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
	if err := h.Failed(); err != nil {
		return err // the state is gone: nothing to hand off
	}
	h.handOff(e)
	return serveErr
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
		Policy:      h.Policy,
		Audit:       h.Audit,
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
	pid, err := startWorker(e, h.Host)
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
// unless one does the worker duty already (then it returns pid 0; see
// workerRuns). The
// worker runs in its own session, detached from serve's client, with
// stdin from /dev/null and its output appended to the workspace's
// worker.log.
func startWorker(e *env, h *host.Host) (int, error) {
	ws := h.Workspace
	if workerRuns(h) {
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
