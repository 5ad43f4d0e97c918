// Helpers shared by the end-to-end tests (outside test/, so that node
// --test does not take this file for a test).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

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

// stopWorkers stops the background workers that serve or `mcp-host answer`
// started for the workspace in cwd (they would idle a minute before
// exiting), and waits until they are gone.
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
