//go:build race

package cli

// raceEnabled: this test binary runs under the race detector, which slows
// every process it starts several times over.
const raceEnabled = true
