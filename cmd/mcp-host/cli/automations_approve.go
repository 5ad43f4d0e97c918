package cli

import (
	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/store"
)

// autoApprovalCommands: automations approve, automations reject.
func (e *env) autoApprovalCommands() []*cobra.Command {
	approve := &cobra.Command{
		Use:   "approve <id|key>",
		Short: "Let an agent's pending automation fire (from its next due time on)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.autoEdit(cmd.Context(), true, func(svc *automations.Service) (*store.Automation, error) {
				return svc.Approve(cmd.Context(), args[0])
			})
		},
	}
	reject := &cobra.Command{
		Use:   "reject <id|key>",
		Short: "Delete an agent's pending automation (new, or changed while it waited)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return e.withHost(cmd.Context(), true, func(a *host.Host) error {
				x, err := a.Automations.Reject(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(map[string]any{"rejected": x.ID, "key": x.Key})
				}
				e.printf("rejected %s (%s): deleted\n", x.Key, x.ID)
				return nil
			})
		},
	}
	return []*cobra.Command{approve, reject}
}
