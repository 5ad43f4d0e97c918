package cli

import "github.com/spf13/cobra"

// automationCommands: automations, roll.
func (e *env) automationCommands() []*cobra.Command { return nil }
