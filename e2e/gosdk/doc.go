// Package gosdk tests `mcp-host serve` with the official Go SDK client
// (github.com/modelcontextprotocol/go-sdk), over stdio and streamable
// HTTP, at every protocol version the server offers. It is a module of
// its own so that the SDK stays out of Cairn's go.mod; run it with
// `make e2e` (MCP_HOST_BIN names the binary, else it is built).
package gosdk
