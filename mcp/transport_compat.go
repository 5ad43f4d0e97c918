package mcp

import (
	"os"

	"github.com/cairnhq/cairn/mcp/transport"
)

// Names that moved to package transport, kept so that callers build while
// they move over. Deprecated: use the transport package's names.
type (
	// Deprecated: use transport.ListenParams.
	ListenParams = transport.ListenParams
	// Deprecated: use transport.HTTPOptions.
	HTTPOptions = transport.HTTPOptions
)

// HTTPPath is where the streamable HTTP endpoint is served.
//
// Deprecated: use transport.HTTPPath.
const HTTPPath = transport.HTTPPath

// ResolveListenAddr applies the loopback default to a listen address.
//
// Deprecated: use transport.ResolveListenAddr.
func ResolveListenAddr(p ListenParams) (string, error) { return transport.ResolveListenAddr(p) }

// RedirectStdout keeps the protocol stream safe from stray writes.
//
// Deprecated: use transport.RedirectStdout.
func RedirectStdout() (*os.File, error) { return transport.RedirectStdout() }
