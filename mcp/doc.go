// Package mcp is Cairn's Model Context Protocol adapter: the tool and
// resource definitions an agent client sees, their handlers, the
// notifications they send; package transport carries them (stdio and
// streamable HTTP). It holds no domain logic: every handler calls the same
// domain API as the command line (runs, sessions, automations) and turns
// the answer into a tool result.
//
// # Domains and shapes
//
// The handlers reach each domain through a small unexported interface that
// lists the methods they call (domains.go): *runs.Engine, *sessions.Manager
// and *automations.Service satisfy them. A tool answers with the domain
// type where agents see the same shape (*runs.Run, *store.Message,
// runs.Record) and with a wire type only where the shape differs (wire.go:
// pages with next_cursor, a session with its memory file, an automation
// with its history). Output schemas are generated from those Go types with
// github.com/google/jsonschema-go (schema_out.go), so they cannot drift
// from what the tools return; input schemas are written by hand because
// they carry the bounds every argument must respect.
//
// # Errors
//
// A domain failure (an unknown run, an answer to a run that is not waiting,
// a bad cron string) is a tool result with isError set and a message a
// person can act on. Only protocol faults (invalid JSON, an unknown method or
// tool, a message over the size limit) are JSON-RPC errors. A panicking
// handler is recovered and reported as a tool error; the session goes on.
//
// # Transports
//
// Package transport carries the messages: stdio and streamable HTTP, both
// our own loops around server.MCPServer.HandleMessage, so that a progress
// notification never reaches a client after its call's response. The
// Server's ServeStdio, HTTPHandler and ServeHTTP hand it the mcp-go server.
//
// # Resources
//
// cairn://runs/{id} (the run as JSON) and cairn://runs/{id}/output (its
// journal) are resource templates. Subscriptions are tracked per session;
// a subscribed run is watched through the run engine's change hook and by
// polling the store, so a change made by another process is announced too.
package mcp
