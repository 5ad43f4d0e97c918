package cli

import "github.com/spf13/cobra"

// sessionCommands: sessions.
func (e *env) sessionCommands() []*cobra.Command { return nil }
