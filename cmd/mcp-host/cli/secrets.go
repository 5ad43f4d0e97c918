package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cairnhq/cairn/secrets"
)

func (e *env) secretsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Set, list and delete the secrets workflows read as ${{ secrets.NAME }}",
		Long: `Secrets are values a step reads as ${{ secrets.NAME }} in its env:, exec or
shell arguments and http headers or body. They are resolved when the step
starts, never stored in a run, its journal, a backup or a tool result, and
replaced with *** wherever a run's output shows them. Prefer env: to
arguments: other local users can read a process's arguments, not its
environment.

They live in secrets.json in the workspace's state folder, mode 0600 (a file
that group or others can read, or a symbolic link, is refused). There is no
OS keychain store: the file is the store.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(e.secretsSetCommand(), e.secretsListCommand(), e.secretsDeleteCommand())
	return cmd
}

// secretStore opens this workspace's secrets file; write prepares the
// state folder first.
func (e *env) secretStore(write bool) (*secrets.Store, error) {
	if e.dryRun {
		return nil, usagef("secrets are not kept by a dry run: run without --dry-run")
	}
	ws, err := e.workspace()
	if err != nil {
		return nil, err
	}
	if write {
		if err := ws.Prepare(); err != nil {
			return nil, err
		}
	}
	return secrets.Open(ws.StateDir, ws.LocksDir()), nil
}

// namedSecretStore checks a secret's name (a usage error when bad) and
// opens the store to change it.
func (e *env) namedSecretStore(name string) (*secrets.Store, error) {
	if err := secrets.ValidateName(name); err != nil {
		return nil, usagef("%v", err)
	}
	return e.secretStore(true)
}

func (e *env) secretsSetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "set NAME",
		Short: "Set a secret: the value is read from stdin (or asked for, without echo, on a terminal)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := e.namedSecretStore(args[0])
			if err != nil {
				return err
			}
			v, err := e.readSecret(args[0])
			if err != nil {
				return err
			}
			if err := s.Set(cmd.Context(), args[0], v); err != nil {
				return err
			}
			if e.json {
				return e.printJSON(map[string]string{"set": args[0]})
			}
			e.printf("secret %s set\n", args[0])
			return nil
		},
	}
}

// readSecret reads a value: without echo when stdin is a terminal, else
// all of stdin but one trailing newline.
func (e *env) readSecret(name string) (string, error) {
	if f, ok := e.stdio.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(e.stdio.Err, "value of %s: ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stdio.Err)
		if err != nil {
			return "", fmt.Errorf("read secret: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(e.stdio.In, secrets.MaxValueLen+3))
	if err != nil {
		return "", fmt.Errorf("read secret from stdin: %w", err)
	}
	line := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if line == "" {
		return "", fmt.Errorf("read secret: stdin gave no value (pipe it in: printf %%s \"$TOKEN\" | mcp-host secrets set %s)", name)
	}
	return line, nil
}

func (e *env) secretsListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the secrets' names (never their values)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := e.secretStore(false)
			if err != nil {
				return err
			}
			names, err := s.Names()
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(map[string][]string{"secrets": names})
			}
			if len(names) == 0 {
				e.printf("no secrets (set one with: mcp-host secrets set NAME)\n")
			}
			for _, n := range names {
				e.printf("%s\n", n)
			}
			return nil
		},
	}
}

func (e *env) secretsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a secret",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := e.namedSecretStore(args[0])
			if err != nil {
				return err
			}
			if err := s.Delete(cmd.Context(), args[0]); err != nil {
				return err
			}
			if e.json {
				return e.printJSON(map[string]string{"deleted": args[0]})
			}
			e.printf("secret %s deleted\n", args[0])
			return nil
		},
	}
}
