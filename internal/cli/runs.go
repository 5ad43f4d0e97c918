package cli

import "github.com/spf13/cobra"

// runCommands: run, runs, watch, answer, cancel, worker, list, init.
func (e *env) runCommands() []*cobra.Command { return nil }
