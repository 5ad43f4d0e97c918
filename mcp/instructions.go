package mcp

// instructions tell an agent how Cairn's tools fit together. They are sent
// in the initialize answer.
const instructions = `Cairn runs the workflows defined in this workspace (.cairn/workflows/*.yaml) durably: a run survives restarts of this server and of the machine, and any mcp-host process can finish it.

Runs
- list_targets shows what can be launched, with each target's input JSON Schema.
- launch_run starts a run and returns it at once. Pass wait_seconds (at most 60) to wait for it to finish or to stop on a question; with a progress token you get a progress notification per output batch while it waits. A run that is still going is normal: follow it.
- Follow a run with read_run_output: pass back next_cursor each time, with wait_seconds to long-poll; done=true means the run ended. get_run gives its status; list_runs finds runs.
- Or subscribe to the resources cairn://runs/{run_id} (the run) and cairn://runs/{run_id}/output (its journal): you get notifications/resources/updated when they change, even when another process changed them.
- A run with status "waiting" and a question is parked until someone answers: call answer_run with one of the question's choices (any text when there are none). A person may also answer from the command line (mcp-host answer). A question with for=human (or one about a step that may or may not have run) is for the person: do not answer it; tell them, and if your client supports elicitation they are asked directly.
- cancel_run stops a run; settled runs (succeeded, failed, cancelled) cannot change.

Automations
- create_automation fires a target on a schedule: cron (with an IANA tz), every (an interval measured from the previous completion), files (a workspace glob, polled) or url (an HTTP body, polled). Creating the same key and spec again returns the existing one.
- Automations you create are owned by this client; you can change only your own. list_automations shows yours, or every one with all=true. One with approval=pending waits for the person to approve it (mcp-host automations approve KEY) and fires nothing until then. update_automation pauses (enabled=false, with a note) or edits; trigger_automation fires one now; delete_automation removes it.
- Automations fire only while an mcp-host process is alive for this workspace (this server, or a background "mcp-host worker").

Sessions
- Sessions store agent conversations durably: create_session, append_session_messages (atomic; safe from many clients at once), get_session (paged by cursor), list_sessions, delete_session.
- compact_session replaces old messages with your summary, keeping the last few; the full old state is archived and the summary written to the session's memory file.

Errors
- A refusal by the workspace's policy names the setting (agents.* in .cairn/config.yaml) that only the person can change.
- A tool error (isError) explains what went wrong and what to do: read it and adjust the arguments; retrying the same call unchanged will fail the same way.`
