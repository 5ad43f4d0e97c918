// End-to-end tests of the prompts, completions and run log of `mcp-host
// serve` with the official MCP TypeScript client.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'cairn-e2e-prompts-'));
const workspace = join(tmp, 'ws');
const state = join(tmp, 'state');
const WORKFLOWS_DIR = join(repo, 'mcp', 'e2e', 'testdata', 'workflows');

let client;
const logs = [];

before(async () => {
  mkdirSync(join(workspace, '.cairn', 'workflows'), { recursive: true });
  mkdirSync(state, { recursive: true, mode: 0o700 });
  for (const name of ['hello.yaml', 'confirm.yaml', 'slow.yaml']) {
    copyFileSync(join(WORKFLOWS_DIR, name), join(workspace, '.cairn', 'workflows', name));
  }
  let bin = process.env.MCP_HOST_BIN;
  if (!bin) {
    bin = join(tmp, 'mcp-host');
    execFileSync('go', ['build', '-o', bin, './cmd/mcp-host'], { cwd: repo, stdio: 'inherit' });
  }
  const transport = new StdioClientTransport({ command: bin, args: ['serve'], cwd: workspace, env: { ...process.env, CAIRN_STATE: state, HOME: tmp }, stderr: 'pipe' });
  client = new Client({ name: 'cairn-e2e-prompts', version: '1.0.0' });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  rmSync(tmp, { recursive: true, force: true });
});

test('prompts run, schedule and status are listed and filled in', async () => {
  const { prompts } = await client.listPrompts();
  assert.deepEqual(prompts.map((p) => p.name).sort(), ['run', 'schedule', 'status']);
  const run = await client.getPrompt({ name: 'run', arguments: { target: 'hello', input: '{"who":"ts"}' } });
  assert.equal(run.messages[0].role, 'user');
  assert.match(run.messages[0].content.text, /launch_run/);
  assert.match(run.messages[0].content.text, /"hello"/);
  const sched = await client.getPrompt({ name: 'schedule', arguments: { target: 'hello', when: 'every weekday at 9' } });
  assert.match(sched.messages[0].content.text, /create_automation/);
  const status = await client.getPrompt({ name: 'status' });
  assert.match(status.messages[0].content.text, /running runs/);
});

test('completions offer targets, automation keys and run ids', async () => {
  const targets = await client.complete({ ref: { type: 'ref/prompt', name: 'run' }, argument: { name: 'target', value: 'he' } });
  assert.deepEqual(targets.completion.values, ['hello']);
  const made = await client.callTool({ name: 'create_automation', arguments: { key: 'weekly', target: 'hello', cron: '0 3 * * 1', tz: 'UTC' } });
  assert.ok(!made.isError, JSON.stringify(made.content));
  const keys = await client.complete({ ref: { type: 'ref/prompt', name: 'schedule' }, argument: { name: 'key', value: 'we' } });
  assert.deepEqual(keys.completion.values, ['weekly']);
  const res = await client.callTool({ name: 'launch_run', arguments: { target: 'hello', wait_seconds: 30 } });
  const id = res.structuredContent.id;
  const ids = await client.complete({ ref: { type: 'ref/resource', uri: 'cairn://runs/{run_id}' }, argument: { name: 'run_id', value: id.slice(0, 8) } });
  assert.ok(ids.completion.values.includes(id), `run ids ${ids.completion.values} lack ${id}`);
});

test('the run log follows logging/setLevel', async () => {
  await client.setLoggingLevel('info');
  const res = await client.callTool({ name: 'launch_run', arguments: { target: 'hello', wait_seconds: 30 } });
  const id = res.structuredContent.id;
  for (let i = 0; i < 600 && !logs.some((l) => l.data?.run_id === id && l.data?.status === 'succeeded'); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const mine = logs.filter((l) => l.data?.run_id === id);
  assert.ok(mine.some((l) => l.data.status === 'succeeded' && l.level === 'info' && l.logger === 'cairn.runs'), `log messages: ${JSON.stringify(mine)}`);

  // At warning a success is not told, a cancellation (a warning) is; the
  // messages leave in the order the runs changed.
  await client.setLoggingLevel('warning');
  const quiet = (await client.callTool({ name: 'launch_run', arguments: { target: 'hello', wait_seconds: 30 } })).structuredContent.id;
  const slow = (await client.callTool({ name: 'launch_run', arguments: { target: 'slow' } })).structuredContent.id;
  await client.callTool({ name: 'cancel_run', arguments: { run_id: slow } });
  for (let i = 0; i < 600 && !logs.some((l) => l.data?.run_id === slow && l.data?.status === 'cancelled'); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(logs.some((l) => l.data?.run_id === slow && l.data?.status === 'cancelled' && l.level === 'warning'), `log messages: ${JSON.stringify(logs)}`);
  assert.deepEqual(logs.filter((l) => l.data?.run_id === quiet), [], 'a run logged below the level set');
});
