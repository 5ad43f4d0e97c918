package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/cairnhq/cairn/access"
	"github.com/cairnhq/cairn/audit"
	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/internal/ids"
	"github.com/cairnhq/cairn/mcp/mcptest"
	"github.com/cairnhq/cairn/mcp/transport"
	"github.com/cairnhq/cairn/sessions"
	"github.com/cairnhq/cairn/store"
	"github.com/cairnhq/cairn/store/memory"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixture is a Server over the real session manager and automation
// service on the memory store and a fake run engine, served on in-memory
// pipes, with a client connected and initialized.
type fixture struct {
	t       testing.TB
	srv     *Server
	st      *memory.Store
	runs    *fakeEngine
	client  *mcptest.Client
	stdin   io.WriteCloser // the client's end
	served  chan error     // ServeStdio's result
	release chan struct{}  // closed to unblock test_block calls
	blocked chan struct{}  // one value per test_block call that started
}

type fixtureOpts struct {
	maxInFlight int
	noInit      bool
	// version is the protocol version asked for (default 2025-11-25).
	version     string
	clientName  string
	ignorePings bool
	// patientSync waits for a first ping answer as long as for any: the
	// client answers, maybe slowly behind a deep backlog on a busy machine.
	patientSync bool
	// syncTimeout, when set, is the wait for a ping answer from a client
	// that answered one before (ignorePings sets 100 ms otherwise).
	syncTimeout time.Duration
	// runs replaces the fake engine when set (and runStore its store).
	runs     runEngine
	runStore runStore
	// maxArchives is the sessions' archive retention (nil: the default).
	maxArchives *int
	// policy limits the agent; audit records its actions in the store.
	policy *access.Policy
	audit  bool
}

func setup(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	f := &fixture{
		t:       t,
		st:      st,
		runs:    newFakeEngine(st),
		served:  make(chan error, 1),
		release: make(chan struct{}),
		blocked: make(chan struct{}, 1000),
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	dir := t.TempDir()
	p := Params{
		Version: "test", Runs: f.runs, RunStore: f.runs, Log: log,
		Sessions: sessions.New(st, sessions.Options{
			MemoryDir: filepath.Join(dir, "memory"), LocksDir: filepath.Join(dir, "locks"), MaxArchives: o.maxArchives,
		}),
		Automations: &automations.Service{Store: st, LocksDir: filepath.Join(dir, "locks"), Targets: fakeFires(f.runs)},
		MaxInFlight: o.maxInFlight, PollInterval: 20 * time.Millisecond,
	}
	if o.runs != nil {
		p.Runs, p.RunStore = o.runs, o.runStore
	}
	p.Policy = o.policy
	p.Automations.(*automations.Service).Policy = o.policy
	if o.audit {
		p.Audit = &audit.Log{Store: st}
	}
	f.srv = New(p)
	if o.ignorePings {
		f.srv.syncTimeout = 100 * time.Millisecond
	}
	if o.syncTimeout > 0 {
		f.srv.syncTimeout = o.syncTimeout
	}
	if o.patientSync {
		f.srv.unproven = 10 * time.Second
	}
	f.srv.mcp.AddTools(f.testTools()...)
	ctx, cancel := context.WithCancel(context.Background())
	if err := f.srv.Start(ctx); err != nil {
		t.Fatal(err)
	}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f.stdin = inW
	go func() {
		err := f.srv.ServeStdio(ctx, inR, outW)
		outW.Close()
		f.served <- err
	}()
	f.client = mcptest.New(outR, inW)
	f.client.IgnorePings = o.ignorePings
	t.Cleanup(func() {
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		inW.Close()
		select {
		case err := <-f.served:
			f.served <- err
		case <-time.After(30 * time.Second):
			t.Errorf("ServeStdio did not return after stdin closed")
		}
		cancel()
		f.srv.Close()
		_ = f.client.Wait(context.Background())
	})
	if !o.noInit {
		name := o.clientName
		if name == "" {
			name = "test client"
		}
		version := o.version
		if version == "" {
			version = "2025-11-25"
		}
		if _, err := f.client.InitializeVersion(f.ctx(), name, version); err != nil {
			t.Fatalf("initialize: %v", err)
		}
	}
	return f
}

// ctx is a context for one step of a test: generous, since machines are
// noisy; it only turns a hang into a failure.
func (f *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	f.t.Cleanup(cancel)
	return ctx
}

// call calls a tool and fails the test on a protocol error.
func (f *fixture) call(name string, args any) *mcptest.ToolResult {
	f.t.Helper()
	r, _, err := f.client.CallTool(f.ctx(), name, args, nil)
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	return r
}

// ok calls a tool that must succeed and decodes its structured content.
func (f *fixture) ok(name string, args any, out any) {
	f.t.Helper()
	f.decodeOK(name, args, f.call(name, args), out)
}

// awaitOK waits for the answer to a call of tool name sent with Request:
// it must succeed. It decodes the structured content into out and
// returns the response.
func (f *fixture) awaitOK(name string, ch <-chan mcptest.Message, out any) mcptest.Message {
	f.t.Helper()
	m, err := mcptest.Await(f.ctx(), ch)
	if err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	r, err := mcptest.DecodeToolResult(m)
	if err != nil {
		f.t.Fatalf("%s: %v %s", name, err, m.Raw)
	}
	f.decodeOK(name, nil, r, out)
	return m
}

// decodeOK fails the test unless r (of a call of tool name with args) is
// a success with structured content, and decodes that into out.
func (f *fixture) decodeOK(name string, args any, r *mcptest.ToolResult, out any) {
	f.t.Helper()
	if r.IsError {
		f.t.Fatalf("%s(%v): isError: %s", name, args, r.Text())
	}
	if len(r.StructuredContent) == 0 {
		f.t.Fatalf("%s: no structuredContent", name)
	}
	if out != nil {
		if err := json.Unmarshal(r.StructuredContent, out); err != nil {
			f.t.Fatalf("%s: decode structuredContent: %v", name, err)
		}
	}
}

// fails calls a tool that must fail with isError and returns its message.
func (f *fixture) fails(name string, args any) string {
	f.t.Helper()
	r := f.call(name, args)
	if !r.IsError {
		f.t.Fatalf("%s(%v): succeeded, want isError; result %s", name, args, r.StructuredContent)
	}
	return r.Text()
}

// state is what the fixture's domains hold, to check that a call changed
// nothing.
func (f *fixture) state() string {
	f.t.Helper()
	ctx := f.ctx()
	ss, _, err := f.st.ListSessions(ctx, store.ListSessionsParams{Limit: 1000})
	if err != nil {
		f.t.Fatal(err)
	}
	as, err := f.st.ListAutomations(ctx, store.AutomationFilter{})
	if err != nil {
		f.t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"run writes": f.runs.mutations(), "sessions": ss, "automations": as})
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// fakeFires prepares the runs the automations service fires: of the fake
// engine's targets, stored by the service in its store.
func fakeFires(e *fakeEngine) automations.Targets {
	return automations.TargetsFunc(func(_ context.Context, target string, input json.RawMessage) (*store.Run, error) {
		if _, err := e.Targets().Target(target); err != nil {
			return nil, err
		}
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		return &store.Run{ID: ids.New("run"), Target: target, Input: input, Literals: json.RawMessage(`{}`)}, nil
	})
}

// testTools are tools only tests register: progress through our ordered
// path and through mcp-go's channel, a call that blocks, a panic.
func (f *fixture) testTools() []server.ServerTool {
	type nIn struct {
		N int `json:"n"`
	}
	nSchema := object(nil, obj{"n": integer("count", 0, 100000)})
	out := outputSchema[nIn]()
	return []server.ServerTool{
		newTool("test_progress", "", "sends n progress notifications, then answers", nSchema, out, hints{},
			handler(func(ctx context.Context, c *call, in nIn) (nIn, error) {
				for i := 0; i < in.N; i++ {
					c.Progress(ctx, float64(in.N), fmt.Sprintf("step %d", i+1))
				}
				return in, nil
			})),
		newTool("test_progress_channel", "", "sends n progress notifications through mcp-go's SendNotificationToClient", nSchema, out, hints{},
			handler(func(ctx context.Context, c *call, in nIn) (nIn, error) {
				srv := server.ServerFromContext(ctx)
				for i := 0; i < in.N; i++ {
					if err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": c.token, "progress": i + 1}); err != nil {
						return in, err
					}
				}
				return in, nil
			})),
		newTool("test_block", "", "blocks until the test releases it (a long wait)", object(nil, obj{}), out, hints{},
			handler(func(ctx context.Context, c *call, _ struct{}) (nIn, error) {
				ctx, cancel := transport.WaitContext(ctx)
				defer cancel()
				f.blocked <- struct{}{}
				select {
				case <-f.release:
					return nIn{N: 1}, nil
				case <-ctx.Done():
					return nIn{}, context.Cause(ctx)
				}
			})),
		newTool("test_work", "", "blocks until the test releases it, ignoring the client's going (a write)", object(nil, obj{}), out, hints{},
			handler(func(ctx context.Context, c *call, _ struct{}) (nIn, error) {
				f.blocked <- struct{}{}
				select {
				case <-f.release:
					return nIn{N: 2}, nil
				case <-ctx.Done():
					return nIn{}, ctx.Err()
				}
			})),
		newTool("test_panic", "", "panics", object(nil, obj{}), out, hints{},
			func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
				panic("boom")
			}),
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
