package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/cairnhq/cairn/access"
)

// serverName is the name the server gives in its initialize answer.
const serverName = "cairn"

// defaultPollInterval is how often subscribed runs are re-read from the
// store to notice changes made by other processes.
const defaultPollInterval = 250 * time.Millisecond

// Params configures a Server. Every domain service is optional: a nil one
// leaves its tools registered, each answering with an isError result that
// says the feature is not available in this build.
type Params struct {
	// Version is reported in the initialize answer.
	Version string
	// Runs is the run engine (a *runs.Engine).
	Runs runEngine
	// RunStore is the engine's store (a store.RunStore): subscriptions poll
	// it for run records.
	RunStore runStore
	// Sessions is the session manager (a *sessions.Manager).
	Sessions sessionManager
	// Automations is the automation service (an *automations.Service).
	Automations automationService
	// Policy is what agents may do (nil: the defaults of package access).
	Policy *access.Policy
	// Audit records agent actions (nil: none recorded).
	Audit auditRecorder
	// Log receives the server's own diagnostics (never stdout). Default:
	// discard.
	Log *slog.Logger
	// MaxInFlight bounds concurrent requests per connection; default
	// transport.DefaultMaxInFlight.
	MaxInFlight int
	// PollInterval is how often subscribed runs are re-read from the store;
	// default defaultPollInterval.
	PollInterval time.Duration
}

// Server is Cairn's MCP server: tools and resources over the domain
// services, served on stdio (ServeStdio) or HTTP (HTTPHandler).
//
// Start must be called before serving (it starts the resource watcher);
// Close stops it. A Server is safe for concurrent use.
type Server struct {
	mcp           *server.MCPServer
	p             Params
	log           *slog.Logger
	maxInFlight   int
	pollInterval  time.Duration
	syncTimeout   time.Duration // 0: the transport's default
	unproven      time.Duration // the same for a client not yet known to answer pings
	shutdownGrace time.Duration // 0: the transport's default
	subs          *subscriptions
	logs          *runLog
	args          argChecker

	clientsMu sync.Mutex
	clients   map[string]mcpgo.Implementation // session id -> initialize clientInfo
	conns     connections
	elicit    *elicitor
}

// New builds a Server over the domain services in p.
func New(p Params) *Server {
	if rs, ok := p.Runs.(runStore); ok && p.RunStore == nil {
		p.RunStore = rs
	}
	s := &Server{
		p:            p,
		log:          p.Log,
		maxInFlight:  p.MaxInFlight,
		pollInterval: p.PollInterval,
		clients:      map[string]mcpgo.Implementation{},
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if s.pollInterval <= 0 {
		s.pollInterval = defaultPollInterval
	}
	version := p.Version
	if version == "" {
		version = "dev"
	}
	s.subs = newSubscriptions(s)
	s.elicit = newElicitor(s)
	s.logs = newRunLog(s)

	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, req *mcpgo.InitializeRequest, _ *mcpgo.InitializeResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			s.clientsMu.Lock()
			s.clients[sess.SessionID()] = req.Params.ClientInfo
			s.clientsMu.Unlock()
			s.conns.open(sess.SessionID())
		}
	})
	hooks.AddOnUnregisterSession(func(ctx context.Context, sess server.ClientSession) {
		s.forgetSession(sess.SessionID())
	})
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcpgo.SubscribeRequest, _ *mcpgo.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			s.subs.add(sess, req.Params.URI)
		}
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcpgo.UnsubscribeRequest, _ *mcpgo.EmptyResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil {
			s.subs.remove(sess.SessionID(), req.Params.URI)
		}
	})

	s.mcp = server.NewMCPServer(serverName, version,
		server.WithTitle("Cairn"),
		server.WithDescription("Durable workflow runs, automations and agent sessions for this workspace."),
		server.WithInstructions(instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithToolHandlerMiddleware(s.auditTool),
		server.WithPromptCapabilities(false),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(completer{s}),
		server.WithResourceCompletionProvider(completer{s}),
		server.WithToolHandlerMiddleware(s.recoverTool),
		server.WithToolHandlerMiddleware(s.args.middleware),
		server.WithResourceHandlerMiddleware(s.recoverResource),
		server.WithHooks(hooks),
	)
	s.args.mcp = s.mcp
	s.mcp.AddTools(s.tools()...)
	s.addResources()
	s.addPrompts()
	return s
}

// Start starts the resource watcher and the run log. It returns at once;
// Close stops them.
func (s *Server) Start(ctx context.Context) error {
	if err := s.subs.start(ctx); err != nil {
		return err
	}
	s.logs.start(ctx)
	return nil
}

// Close stops the resource watcher and the run log, waits for them and
// for pending elicitations. It is idempotent.
func (s *Server) Close() {
	s.subs.stop()
	s.logs.stop()
	s.elicit.wait()
}

// forgetSession drops what the server keeps for a session that ended.
func (s *Server) forgetSession(id string) {
	s.clientsMu.Lock()
	delete(s.clients, id)
	s.clientsMu.Unlock()
	s.conns.close(id)
	s.elicit.forget(id)
	s.subs.removeSession(id)
}

// clientName is the name the calling client gave in initialize, or "".
func (s *Server) clientName(ctx context.Context) string {
	sess := server.ClientSessionFromContext(ctx)
	if sess == nil {
		return ""
	}
	if ci, ok := sess.(server.SessionWithClientInfo); ok {
		if name := ci.GetClientInfo().Name; name != "" {
			return name
		}
	}
	s.clientsMu.Lock()
	defer s.clientsMu.Unlock()
	return s.clients[sess.SessionID()].Name
}

// recoverTool turns a panicking tool handler into an isError result.
func (s *Server) recoverTool(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (res *mcpgo.CallToolResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("mcp: tool handler panicked", "tool", req.Params.Name, "panic", r, "stack", string(debug.Stack()))
				res, err = errorResult(fmt.Sprintf("internal error in %s: %v (the server recovered; this is a bug, please report it)", req.Params.Name, r)), nil
			}
		}()
		return next(ctx, req)
	}
}

// recoverResource turns a panicking resource handler into an error.
func (s *Server) recoverResource(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcpgo.ReadResourceRequest) (c []mcpgo.ResourceContents, err error) {
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("mcp: resource handler panicked", "uri", req.Params.URI, "panic", r, "stack", string(debug.Stack()))
				c, err = nil, fmt.Errorf("internal error reading %s: %v", req.Params.URI, r)
			}
		}()
		return next(ctx, req)
	}
}

// errorResult is a tool result reporting a failure to the agent.
func errorResult(msg string) *mcpgo.CallToolResult {
	return mcpgo.NewToolResultError(msg)
}

// okResult is a tool result carrying v as structured content, and as
// equivalent JSON text when both fit in budget bytes (else a summary line:
// see textFor).
func okResult(v any, budget int) (*mcpgo.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return &mcpgo.CallToolResult{
		Content:           []mcpgo.Content{mcpgo.NewTextContent(textFor(v, b, budget))},
		StructuredContent: json.RawMessage(b),
	}, nil
}

// argumentError is a tool argument the handler refused (beyond what the
// input schema catches: an id with a forbidden character, say).
type argumentError struct {
	Name   string
	Reason string
}

func (e *argumentError) Error() string { return fmt.Sprintf("argument %s: %s", e.Name, e.Reason) }

// decodeArgs decodes a call's arguments into dst, refusing unknown fields.
func decodeArgs(req mcpgo.CallToolRequest, dst any) error {
	raw := req.Params.RawArguments
	if len(raw) == 0 {
		if req.Params.Arguments == nil {
			raw = []byte("{}")
		} else {
			b, err := json.Marshal(req.Params.Arguments)
			if err != nil {
				return fmt.Errorf("invalid arguments: %w", err)
			}
			raw = b
		}
	}
	if string(raw) == "null" {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("invalid arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// handler adapts a typed tool function: it decodes the arguments into In,
// calls fn, and turns its answer into a structured result or its error
// into an isError result. Only a result that cannot be encoded is a
// protocol error.
func handler[In any, Out any](fn func(ctx context.Context, c *call, in In) (Out, error)) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		var in In
		if err := decodeArgs(req, &in); err != nil {
			return errorResult(err.Error()), nil
		}
		out, err := fn(ctx, newCall(ctx, req), in)
		if err != nil {
			noteRefusal(ctx, err)
			return errorResult(toolErrorText(req.Params.Name, err)), nil
		}
		budget := DefaultReplyBytes
		if b, ok := any(in).(budgeted); ok {
			budget = b.replyBytes()
		}
		return okResult(fitReply(out, budget), budget)
	}
}

// toolErrorText words a domain error for the agent.
func toolErrorText(tool string, err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, context.Canceled):
		return tool + ": cancelled: " + msg
	case errors.Is(err, context.DeadlineExceeded):
		return tool + ": timed out: " + msg
	}
	return msg
}

// errUnavailable answers the tools of a domain this build does not serve.
type unavailableError struct{ what string }

func (e *unavailableError) Error() string {
	return e.what + " are not available in this mcp-host build"
}

// RunChanged tells the server that a run or its journal changed, so that
// subscribers hear of it at once rather than at the next poll. It never
// blocks: wire it to runs.Options.OnChange.
func (s *Server) RunChanged(id string) {
	s.subs.poke()
	s.logs.changed(id)
}
