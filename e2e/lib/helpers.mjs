// Helpers the end-to-end test files share.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

// stopWorkers stops the background workers that serve or `mcp-host answer`
// started for a test workspace (they would idle a minute before exiting).
export async function stopWorkers(bin, cwd, env) {
  let status;
  try {
    status = JSON.parse(execFileSync(bin, ['--json', 'status'], { cwd, env, stdio: ['ignore', 'pipe', 'ignore'] }).toString());
  } catch {
    return;
  }
  for (const ws of status.workspaces ?? []) {
    const pid = ws.worker?.pid;
    if (!pid) continue;
    try { process.kill(pid, 'SIGTERM'); } catch { continue; }
    for (let i = 0; i < 200; i++) {
      try { process.kill(pid, 0); } catch { break; }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

// until polls fn until it returns a truthy value (a bounded loop: it turns a
// hang into a failure, it is not a timed assertion).
export async function until(what, fn, { tries = 600, every = 100 } = {}) {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, every));
  }
  assert.fail(`gave up waiting for ${what}`);
}

// elicitedRun waits for run (launched by client e, whose elicitation
// handler pushed each request's params to asked) to succeed with the
// person's "yes", and checks the question was asked once, with its
// choices as an enum, and that the journal records the answer as human's.
export async function elicitedRun(e, run, asked) {
  const done = await until('the elicited answer to finish the run', async () => {
    const r = await e.call('get_run', { run_id: run.id });
    return r.status === 'succeeded' && r;
  });
  assert.equal(done.result, 'yes');
  assert.equal(asked.length, 1);
  assert.match(asked[0].message, /Ship it\?/);
  assert.deepEqual(asked[0].requestedSchema.properties.answer.enum, ['yes', 'no']);
  const out = await e.call('read_run_output', { run_id: run.id, limit: 100 });
  const answer = out.records.find((r) => r.type === 'answer');
  assert.ok(answer, JSON.stringify(out.records));
  assert.equal(answer.by, 'human');
  return answer;
}

// sharedStore is the configuration lines that put a test workspace's
// state in PostgreSQL when CAIRN_E2E_POSTGRES holds a database URL (a
// database of the caller's: each workspace gets a schema of its own,
// named by name and this process), else nothing: SQLite.
export function sharedStore(name) {
  const url = process.env.CAIRN_E2E_POSTGRES;
  if (!url) return '';
  return `workspace_id: e2e-${process.pid}-${name}\nstore:\n  url: ${JSON.stringify(url)}\n`;
}
