//go:build race

package mcp

// raceEnabled: the race detector makes JSON work about ten times slower,
// so the largest outputs are made smaller (see bigLineBytes).
const raceEnabled = true
