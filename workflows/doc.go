// Package workflows loads and validates workflow definitions, the files in
// <workspace>/.cairn/workflows/, and evaluates their `${{ }}` expressions.
// It is pure: it reads files and YAML, never the store or processes; the
// run engine (package runs) executes what it returns.
//
// # File format
//
// One workflow per *.yaml or *.yml file (hidden files are ignored):
//
//	name: hello                  # optional; defaults to the file name without .yaml
//	description: Greet, ask, finish
//	input:                       # optional JSON Schema of the input object
//	  type: object
//	  properties:
//	    who: {type: string, default: world}
//	steps:
//	  - id: greet
//	    exec: ["echo", "hello ${{ input.who }}"]
//	  - id: confirm
//	    ask: "Go on, ${{ input.who }}?"
//	    choices: ["yes", "no"]
//	  - id: write
//	    if: ${{ steps.confirm.answer == "yes" }}
//	    shell: "echo done >> out.txt"
//	    safe_to_repeat: false
//	    timeout: 30s
//	  - id: nap
//	    sleep: 2s
//	result: ${{ steps.greet.stdout }}
//	on:                          # optional triggers for automations
//	  - {cron: "0 3 * * *", tz: Europe/Berlin}
//
// Top-level keys: name, description, input, steps (required, at least one),
// result, on. Any other key is an error, so a typo is never silently
// ignored; the same holds for step, retry, http and trigger keys.
//
// name must be a valid id (letters, digits, '.', '_', '-', ':'; at most
// 128 characters). input is a JSON Schema (draft 2020-12 unless $schema
// says otherwise; formats are asserted; $ref only within the schema). The
// input is always an object; the `default` of each top-level property
// fills a missing key before validation.
//
// # Steps
//
// Every step has an `id` (unique, a valid id) and exactly one action:
//
//	exec: [prog, arg, ...]       run argv directly, no shell
//	shell: "script"              run with sh -c
//	ask: "question"              park the run until answered; optional
//	                             choices: [a, b], and timeout: 1h with
//	                             default: a (the answer when nobody replies);
//	                             for: human (only a person answers it)
//	sleep: 10m                   durable wait
//	http:                        a request; status and body are recorded
//	  method: POST               default GET
//	  url: https://example.com/hook
//	  headers: {Authorization: "Bearer ${{ input.token }}"}
//	  body: '{"text": "done"}'
//	  expect_status: [200, 204]  default: any 2xx
//
// Options, per step:
//
//	if: <expression>             run only when true (nil counts as false);
//	                             the ${{ }} around it is optional
//	timeout: 30s                 exec, shell, http; for ask, the wait
//	retry: {attempts: 3, backoff: 5s}   exec, shell, http; attempts (1-100)
//	                             counts all tries; backoff defaults to 0
//	safe_to_repeat: true         may the step run again after a crash cut it
//	                             short? Default true for sleep, ask and http
//	                             GET/HEAD; false for exec, shell and other http
//	env: {NAME: value}           exec, shell: added to the allowlisted environment
//	dir: sub/dir                 exec, shell: working dir relative to the
//	                             workspace (no "..", not absolute); may
//	                             hold ${{ }}, checked when the step starts
//	continue_on_error: true      when the step fails (after its retries) the
//	                             run goes on; the step stays failed
//	                             (steps.<id>.status == "failed")
//	output: file                 exec, shell: keep the whole output (stdout
//	                             and stderr lines, in order) in a file in the
//	                             run's folder instead of the capped journal;
//	                             default journal
//
// # Finally
//
// `finally:` is a second list of steps (same format; ids unique across both
// lists) that runs once the steps are done, whether they succeeded, failed
// or were cancelled; each finally step runs once, also when another process
// adopts the run; a run cancelled while it waits (on a question or a sleep)
// is resumed to run them, one cancelled while still queued runs none. A
// cancel does not stop them (their timeouts do); an ask
// or sleep among them cannot wait once the run is cancelled and is skipped.
// A failing finally step does not stop the others, and fails a run that
// had succeeded. They see run.status ("succeeded", "failed", "cancelled")
// and run.failed_step (the id of the step that failed the run, else "").
//
// Durations are Go durations: 500ms, 30s, 5m, 1h30m.
//
// # Triggers
//
// `on:` is a list; each entry is one of
//
//	{cron: "0 3 * * *", tz: Europe/Berlin}   tz optional (local time)
//	{every: 15m}                             interval
//	{files: "docs/**/*.md", every: 30s}      files: a glob or a list; relative
//	                                         to the workspace; every optional
//	{http: "https://example.com/feed", every: 5m}   http or https, no user:pass@
//
// The cron expression and zone are checked by package automations.
//
// # Expressions
//
// `${{ expr }}` holds an expr-lang expression (https://expr-lang.org). A
// string may mix several with text ("hello ${{ input.who }}!") and renders
// to a string: nil as "", numbers plainly, lists and maps as JSON. A
// string that is exactly one `${{ expr }}` keeps the value's own type,
// which is what `if` and `result` use. Expressions may appear in exec
// arguments, shell, ask text, http url, headers and body, env values,
// dir, if and result; every other field, the input schema included, is
// read as written and refuses `${{` at load. They see:
//
//	input.<key>                  the validated input
//	steps.<id>.status            "" until the step ran, then the engine's status
//	steps.<id>.stdout / stderr / exit_code      exec and shell
//	steps.<id>.answer            ask
//	steps.<id>.status_code / body               http
//	steps.<id>.output            stdout (or body) parsed as JSON, else nil
//	run.id, run.target, run.trigger
//	secrets.NAME                 a secret (mcp-host secrets set NAME), only in
//	                             env values, exec and shell arguments and http
//	                             headers and body: resolved when the step
//	                             starts, never stored, redacted from output
//	run.status, run.failed_step  "running" and "" in the steps; see Finally
//
// A step that has not run reads as empty (exit_code, output and
// status_code are nil); use ?. to reach into a possibly nil value
// (steps.x.output?.count). Every expression is compiled at load time:
// syntax errors, unknown names and fields, and steps.<id> naming a step
// the file does not have are load errors with file, line and field.
// An `if` whose type is known at load time must be boolean
// (`if: ${{ steps.x.stdout }}` is refused: compare it with something).
// shellQuote(s) quotes a value for a shell script; passing values through
// env and "$NAME" is better still. A shell: script that reads input
// without shellQuote (number, integer and boolean inputs excepted) loads
// with a warning naming its file and line (Workflow.Warnings, wrapping
// ErrUnquotedShellInput): "$(id)" in an input would run.
//
// YAML tip: `key: ${{ a == "b" }}` needs no quotes, but a value holding
// ": " (a map literal like {"k": v}) or starting with a quote must be
// quoted as a whole: `result: '${{ {"k": steps.x.stdout} }}'`.
//
// # Errors
//
// Load errors are *Error values naming file, line and field, e.g.
//
//	hello.yaml:14: step "write": timeout: bad duration "30": missing unit (write e.g. "30s")
//	hello.yaml:9: step "x" has both exec and shell; choose one
//
// Input errors are *InputError ("input: /who: expected string, got number").
//
// # Snapshots
//
// Parse(name, bytes) is all there is: the engine stores Workflow.File and
// Workflow.Source when it launches a run and parses them again to resume,
// so a run executes what it was launched with.
package workflows
