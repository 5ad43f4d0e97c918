package cli

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/service"
)

// serviceReport is what service install, uninstall and status print.
type serviceReport struct {
	OS     string `json:"os"`
	Name   string `json:"name"` // the unit name or launchd label
	Path   string `json:"path"`
	Action string `json:"action"` // written, unchanged, removed, absent, or the status
	// Ran are the service manager commands run; ToRun those the user
	// must run because the manager could not be reached from here.
	Ran   [][]string `json:"ran,omitempty"`
	ToRun [][]string `json:"to_run,omitempty"`
	Why   string     `json:"why,omitempty"` // why ToRun was not run
}

func (e *env) serviceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Keep a worker running for this workspace with no editor open (systemd user unit or launchd agent)",
		Long: `Install, remove or inspect the per-user service that runs "mcp-host worker"
for this workspace (--workspace DIR, else the current one), so automations fire
after a reboot or logout with no editor open. Linux: a systemd user unit in
$XDG_CONFIG_HOME/systemd/user (default ~/.config); macOS: a launchd agent in
~/Library/LaunchAgents. One service per workspace, named after its id; the
service manager restarts the worker whenever it exits.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	var print bool
	install := &cobra.Command{
		Use:   "install",
		Short: "Write and start the service (idempotent; --print shows it without installing)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := e.serviceFile()
			if err != nil {
				return err
			}
			if print {
				_, err := e.stdio.Out.Write(f.Content)
				return err
			}
			res, err := service.Install(f)
			if err != nil {
				return err
			}
			rep := serviceReport{OS: f.OS, Name: f.Name, Path: f.Path, Action: "unchanged"}
			if res == service.Written {
				rep.Action = "written"
				e.tellManager(cmd, f, &rep, service.Commands(f, "install"))
			}
			return e.printService(rep)
		},
	}
	install.Flags().BoolVar(&print, "print", false, "print the unit or plist instead of installing it")
	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop the service and remove the file service install wrote",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := e.serviceFile()
			if err != nil {
				return err
			}
			rep := serviceReport{OS: f.OS, Name: f.Name, Path: f.Path, Action: "absent"}
			if st, err := service.Status(f); err != nil {
				return err
			} else if st != service.NotInstalled {
				e.tellManager(cmd, f, &rep, service.Commands(f, "uninstall"))
			}
			res, err := service.Uninstall(f)
			if err != nil {
				return err
			}
			if res == service.Removed {
				rep.Action = "removed"
				e.tellManager(cmd, f, &rep, service.Commands(f, "uninstalled"))
			}
			return e.printService(rep)
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the service is installed, and what the service manager says of it",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := e.serviceFile()
			if err != nil {
				return err
			}
			st, err := service.Status(f)
			if err != nil {
				return err
			}
			rep := serviceReport{OS: f.OS, Name: f.Name, Path: f.Path, Action: string(st)}
			if ok, why := service.Reachable(f); ok && f.OS == "linux" && st != service.NotInstalled {
				out, _ := exec.CommandContext(cmd.Context(), "systemctl", "--user", "is-active", f.Name).Output()
				rep.Action += "; systemd: " + strings.TrimSpace(string(out))
			} else if why != "" {
				rep.Why = why
			}
			return e.printService(rep)
		},
	}
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

// serviceFile renders this workspace's service for the running OS.
func (e *env) serviceFile() (service.File, error) {
	ws, err := e.workspace()
	if err != nil {
		return service.File{}, err
	}
	root, err := e.stateRoot()
	if err != nil {
		return service.File{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return service.File{}, fmt.Errorf("find the mcp-host executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return service.File{}, fmt.Errorf("find the mcp-host executable: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return service.File{}, fmt.Errorf("find the home folder: %w", err)
	}
	return service.Render(runtime.GOOS, service.Spec{
		Binary: exe, StateRoot: root, Workspace: ws.Root, WorkspaceID: ws.ID,
		Home: home, ConfigHome: os.Getenv("XDG_CONFIG_HOME"), Env: serviceEnv(),
	})
}

// tellManager runs cmds when the service manager is reachable, and
// otherwise records them for the user to run.
func (e *env) tellManager(cmd *cobra.Command, f service.File, rep *serviceReport, cmds [][]string) {
	if ok, why := service.Reachable(f); !ok {
		rep.ToRun, rep.Why = append(rep.ToRun, cmds...), why
		return
	}
	for i, c := range cmds {
		if err := service.Run(cmd.Context(), c); err != nil {
			fmt.Fprintf(e.stdio.Err, "mcp-host: %v\n", err)
			rep.ToRun, rep.Why = append(rep.ToRun, cmds[i:]...), "a command failed"
			return
		}
		rep.Ran = append(rep.Ran, c)
	}
}

func (e *env) printService(rep serviceReport) error {
	if e.json {
		return e.printJSON(rep)
	}
	switch rep.Action {
	case "written":
		e.printf("wrote %s (%s)\n", rep.Path, rep.Name)
	case "unchanged":
		e.printf("unchanged: %s already holds this service (%s); nothing to do\n", rep.Path, rep.Name)
	case "removed":
		e.printf("removed %s (%s)\n", rep.Path, rep.Name)
	case "absent":
		e.printf("not installed: no %s\n", rep.Path)
	default:
		e.printf("%s: %s (%s)\n", rep.Name, rep.Action, rep.Path)
	}
	for _, c := range rep.Ran {
		e.printf("ran: %s\n", strings.Join(c, " "))
	}
	if len(rep.ToRun) > 0 {
		e.printf("the service manager was not told (%s); run:\n", rep.Why)
		for _, c := range rep.ToRun {
			e.printf("  %s\n", strings.Join(c, " "))
		}
	}
	if rep.OS == "linux" && rep.Action == "written" {
		e.printf("to keep it running without a login session (after a reboot, before you log in): loginctl enable-linger %s\n", cmp.Or(os.Getenv("USER"), "$USER"))
	}
	return nil
}

// serviceEnv is the install command's PATH, LANG and TZ, for the runs the
// service's worker starts.
func serviceEnv() []string {
	var env []string
	for _, name := range service.ServiceEnv {
		if v := os.Getenv(name); v != "" && !strings.ContainsAny(v, "\n\r\x00") {
			env = append(env, name+"="+v)
		}
	}
	return env
}
