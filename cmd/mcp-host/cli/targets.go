package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/cairnhq/cairn/internal/text"

	"github.com/spf13/cobra"

	"github.com/cairnhq/cairn/automations"
	"github.com/cairnhq/cairn/host"
	"github.com/cairnhq/cairn/workflows"
)

type targetInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	File        string          `json:"file"`
	Steps       int             `json:"steps"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func (e *env) listCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the workflows this workspace can run, and its schedules with their last and next times",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := e.workspace()
			if err != nil {
				return err
			}
			settings, err := host.LoadSettings(ws)
			if err != nil {
				return err
			}
			targets := settings.Workflows.Targets(ws.WorkflowsDir())
			wfs, problems := targets.List()
			var st workspaceStatus // the workspace's automations, its triggers synced
			if err := e.readSyncedStore(cmd.Context(), ws.DBPath(), &st); err != nil {
				return err
			}
			out := struct {
				Targets   []targetInfo          `json:"targets"`
				Schedules []automations.Summary `json:"schedules"`
				Errors    []string              `json:"errors"`
				Warnings  []string              `json:"warnings,omitempty"`
			}{Targets: []targetInfo{}, Schedules: st.Schedules, Errors: []string{}, Warnings: host.WorkflowWarnings(targets, "")}
			for name, wf := range wfs {
				out.Targets = append(out.Targets, targetInfo{Name: name, Description: wf.Description, File: filepath.Base(wf.File), Steps: len(wf.Steps), InputSchema: wf.InputSchema()})
			}
			sort.Slice(out.Targets, func(i, j int) bool { return out.Targets[i].Name < out.Targets[j].Name })
			for _, p := range problems {
				out.Errors = append(out.Errors, p.Error())
			}
			if e.json {
				return e.printJSON(out)
			}
			if len(out.Targets) == 0 && len(out.Errors) == 0 {
				e.printf("no workflows in %s (mcp-host init writes a starter)\n", ws.WorkflowsDir())
				return nil
			}
			tw := tabwriter.NewWriter(e.stdio.Out, 0, 4, 2, ' ', 0)
			for _, t := range out.Targets {
				fmt.Fprintf(tw, "%s\t%s\n", t.Name, text.OneLine(t.Description, 80))
			}
			tw.Flush()
			if len(out.Schedules) > 0 {
				e.printf("\nschedules:\n")
				for _, a := range out.Schedules {
					e.printf("  %s\n", scheduleLine(a))
				}
			}
			for _, p := range out.Errors {
				fmt.Fprintf(e.stdio.Err, "mcp-host: %s\n", p)
			}
			for _, w := range out.Warnings {
				fmt.Fprintf(e.stdio.Err, "mcp-host: warning: %s\n", w)
			}
			return nil
		},
	}
}

func (e *env) initCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Write a starter workflow, .cairn/workflows/hello.yaml (never overwrites)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, err := e.workspace()
			if err != nil {
				return err
			}
			p := filepath.Join(ws.WorkflowsDir(), workflows.StarterFile)
			res := struct {
				Path    string `json:"path"`
				Written bool   `json:"written"`
			}{Path: p}
			if !e.dryRun {
				if res.Written, err = writeNew(p, workflows.Starter()); err != nil {
					return err
				}
			}
			if e.json {
				return e.printJSON(res)
			}
			switch {
			case e.dryRun:
				e.printf("would write %s (dry run)\n", p)
			case res.Written:
				e.printf("wrote %s; run it with: mcp-host run hello\n", p)
			default:
				e.printf("%s exists; left it untouched\n", p)
			}
			return nil
		},
	}
}

// writeNew creates p with data unless it exists; it reports whether it
// wrote.
func writeNew(p string, data []byte) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return false, fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("write %s: %w", p, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(p)
		return false, fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(p)
		return false, fmt.Errorf("write %s: %w", p, err)
	}
	return true, nil
}
