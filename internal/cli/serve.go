package cli

import "github.com/spf13/cobra"

// serveCommands: serve.
func (e *env) serveCommands() []*cobra.Command { return nil }
