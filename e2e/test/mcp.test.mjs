// End-to-end tests of `mcp-host serve` driven by the official MCP TypeScript
// client (@modelcontextprotocol/sdk, pinned in package-lock.json).
//
// The binary comes from MCP_HOST_BIN, or is built from the repository with
// `go build` when that is not set. Every test runs against a fresh workspace
// and state root in a temporary folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { stopWorkers, until } from '../lib/helpers.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'cairn-e2e-'));
const workspace = join(tmp, 'ws');
const state = join(tmp, 'state');

const EXPECTED_TOOLS = [
  'list_targets', 'launch_run', 'get_run', 'list_runs', 'read_run_output', 'answer_run', 'cancel_run',
  'list_automations', 'create_automation', 'update_automation', 'delete_automation', 'trigger_automation',
  'list_sessions', 'get_session', 'create_session', 'append_session_messages', 'compact_session', 'delete_session',
];

// The workflows come from the Go end-to-end tests' folder: one copy of each.
const WORKFLOWS_DIR = join(repo, 'mcp', 'e2e', 'testdata', 'workflows');
const WORKFLOWS = ['hello.yaml', 'confirm.yaml', 'slow.yaml'];

let bin;
let client;
let transport;
const clientErrors = [];
let stderr = '';

function env() {
  return { ...process.env, CAIRN_STATE: state, HOME: tmp };
}

// call calls a tool and fails on a tool error.
async function call(name, args = {}, options) {
  const res = await client.callTool({ name, arguments: args }, undefined, options);
  assert.notEqual(res.isError, true, `${name} failed: ${res.content?.[0]?.text}`);
  assert.ok(res.structuredContent, `${name} returned no structuredContent`);
  return res.structuredContent;
}

// callError calls a tool that must fail with isError and returns the text.
async function callError(name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, true, `${name} should fail, got ${JSON.stringify(res.structuredContent)}`);
  return res.content[0].text;
}

before(async () => {
  mkdirSync(join(workspace, '.cairn', 'workflows'), { recursive: true });
  mkdirSync(state, { recursive: true, mode: 0o700 });
  for (const name of WORKFLOWS) {
    copyFileSync(join(WORKFLOWS_DIR, name), join(workspace, '.cairn', 'workflows', name));
  }
  bin = process.env.MCP_HOST_BIN;
  if (!bin) {
    bin = join(tmp, 'mcp-host');
    execFileSync('go', ['build', '-o', bin, './cmd/mcp-host'], { cwd: repo, stdio: 'inherit' });
  }
  assert.ok(existsSync(bin), `no mcp-host binary at ${bin}`);

  transport = new StdioClientTransport({ command: bin, args: ['serve'], cwd: workspace, env: env(), stderr: 'pipe' });
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  client = new Client({ name: 'cairn-e2e', version: '1.0.0' });
  client.onerror = (err) => { clientErrors.push(err); };
  await client.connect(transport);
});

after(async () => {
  await client?.close();
  if (bin) await stopWorkers(bin, workspace, env());
  if (clientErrors.length > 0) {
    // Surface errors that arrived after the last test checked.
    console.error('client errors:', clientErrors.map(String));
  }
  rmSync(tmp, { recursive: true, force: true });
});

test('the server introduces itself with instructions', () => {
  const info = client.getServerVersion();
  assert.equal(info.name, 'cairn');
  const caps = client.getServerCapabilities();
  assert.ok(caps.tools, 'tools capability');
  assert.equal(caps.resources?.subscribe, true, 'subscribable resources');
  const instructions = client.getInstructions();
  assert.match(instructions, /launch_run/);
  assert.match(instructions, /answer_run/);
});

test('every tool has a description, an input schema, an output schema and all four hints', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...EXPECTED_TOOLS].sort());
  for (const t of tools) {
    assert.ok(t.description && t.description.length > 40, `${t.name}: description`);
    assert.equal(t.inputSchema?.type, 'object', `${t.name}: input schema`);
    assert.equal(t.outputSchema?.type, 'object', `${t.name}: output schema`);
    for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
      assert.equal(typeof t.annotations?.[hint], 'boolean', `${t.name}: ${hint}`);
    }
  }
  const waits = tools.filter((t) => t.inputSchema.properties?.wait_seconds);
  assert.ok(waits.length >= 2);
  for (const t of waits) assert.equal(t.inputSchema.properties.wait_seconds.maximum, 60, `${t.name}: wait_seconds bound`);
});

test('list_targets shows the workspace workflows', async () => {
  const { targets } = await call('list_targets');
  assert.deepEqual(targets.map((t) => t.name).sort(), ['confirm', 'hello', 'slow']);
  assert.ok(targets.find((t) => t.name === 'hello').input_schema, 'input schema of hello');
});

test('launch_run with a progress token waits, reports progress, and the client sees no error', async () => {
  const progress = [];
  const run = await call('launch_run', { target: 'hello', input: { who: 'e2e' }, wait_seconds: 30 }, {
    onprogress: (p) => progress.push(p),
  });
  assert.equal(run.status, 'succeeded', JSON.stringify(run));
  assert.ok(progress.length >= 1, 'at least one progress notification');
  for (let i = 1; i < progress.length; i++) assert.ok(progress[i].progress > progress[i - 1].progress, 'progress increases');
  assert.deepEqual(clientErrors.map(String), [], 'the client reported errors (an unknown progress token?)');
});

test('many concurrent launches with progress never confuse the client', async () => {
  const results = await Promise.all(Array.from({ length: 8 }, (_, i) => {
    let seen = 0;
    return call('launch_run', { target: 'hello', input: { who: `p${i}` }, wait_seconds: 30 }, { onprogress: () => { seen++; } })
      .then((run) => ({ run, seen }));
  }));
  for (const { run, seen } of results) {
    assert.equal(run.status, 'succeeded');
    assert.ok(seen >= 1);
  }
  assert.deepEqual(clientErrors.map(String), []);
});

test('read_run_output pages through the journal with the cursor and ends with done', async () => {
  const run = await call('launch_run', { target: 'hello', input: { who: 'cursor' } });
  const records = [];
  let cursor = '';
  let done = false;
  for (let i = 0; i < 200 && !done; i++) {
    const page = await call('read_run_output', { run_id: run.id, cursor, limit: 2, wait_seconds: 10 });
    assert.ok(page.records.length <= 2);
    records.push(...page.records);
    cursor = page.next_cursor;
    done = page.done;
  }
  assert.ok(done, 'the journal ended');
  assert.equal(records[0].type, 'start');
  assert.equal(records.at(-1).type, 'end');
  assert.equal(records.at(-1).status, 'succeeded');
  assert.ok(records.some((r) => r.type === 'text' && /hello cursor/.test(r.text)), 'the step output is in the journal');
  const again = await call('read_run_output', { run_id: run.id, cursor });
  assert.deepEqual(again.records, [], 'nothing after the end');
  assert.equal(again.done, true);
});

test('a parked run is answered and finishes', async () => {
  const parked = await call('launch_run', { target: 'confirm', wait_seconds: 30 });
  assert.equal(parked.status, 'waiting');
  assert.deepEqual(parked.question.choices, ['yes', 'no']);
  const wrong = await callError('answer_run', { run_id: parked.id, answer: 'maybe' });
  assert.match(wrong, /yes/);
  await call('answer_run', { run_id: parked.id, answer: 'yes' });
  const done = await until('the answered run to succeed', async () => {
    const r = await call('get_run', { run_id: parked.id });
    return r.status === 'succeeded' && r;
  });
  assert.equal(done.result, 'yes');
  const again = await callError('answer_run', { run_id: parked.id, answer: 'yes' });
  assert.match(again, /not waiting/);
});

test('a running run is cancelled', async () => {
  const run = await call('launch_run', { target: 'slow' });
  await until('the slow run to start', async () => (await call('get_run', { run_id: run.id })).status === 'running');
  await call('cancel_run', { run_id: run.id });
  const cancelled = await until('the run to be cancelled', async () => {
    const r = await call('get_run', { run_id: run.id });
    return r.status === 'cancelled' && r;
  });
  assert.equal(cancelled.status, 'cancelled');
  const { runs } = await call('list_runs', { status: 'cancelled' });
  assert.ok(runs.some((r) => r.id === run.id));
});

test('automations go through create, list, update, trigger and delete', async () => {
  const { automation, created } = await call('create_automation', { key: 'nightly-hello', target: 'hello', cron: '0 3 * * 1-5', tz: 'Europe/Paris', input: { who: 'cron' } });
  assert.equal(created, true);
  assert.equal(automation.owner, 'agent:cairn-e2e');
  const same = await call('create_automation', { key: 'nightly-hello', target: 'hello', cron: '0 3 * * 1-5', tz: 'Europe/Paris', input: { who: 'cron' } });
  assert.equal(same.created, false);
  assert.equal(same.automation.id, automation.id);
  const chosen = await callError('create_automation', { key: 'someone-elses', target: 'hello', every: '1h', owner: 'another-session' });
  assert.match(chosen, /cannot choose the owner/);
  execFileSync(bin, ['automations', 'create', '--key', 'someone-elses', '--target', 'hello', '--every', '1h', '--owner', 'another-session'], { cwd: workspace, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });

  const mine = await call('list_automations');
  assert.deepEqual(mine.automations.map((a) => a.key), ['nightly-hello']);
  const all = await call('list_automations', { all: true });
  assert.ok(all.automations.length >= 2);

  const paused = await call('update_automation', { id: automation.id, enabled: false, note: 'paused by the e2e test' });
  assert.equal(paused.enabled, false);
  assert.equal(paused.note, 'paused by the e2e test');
  const resumed = await call('update_automation', { id: automation.id, enabled: true, every: '12h' });
  assert.equal(resumed.enabled, true);
  assert.equal(resumed.trigger.every, '12h');

  const fire = await call('trigger_automation', { id: automation.id });
  assert.equal(fire.outcome, 'queued');
  assert.ok(fire.run_id);

  const bad = await callError('create_automation', { key: 'never', target: 'hello', cron: '0 0 30 2 *' });
  assert.match(bad, /cron|never/i);

  await call('delete_automation', { id: automation.id });
  const after = await call('list_automations');
  assert.deepEqual(after.automations, []);
});

test('sessions go through create, append, read, list, compact and delete', async () => {
  const { session, created } = await call('create_session', { session_id: 'e2e-chat', title: 'E2E' });
  assert.equal(created, true);
  assert.equal(session.id, 'e2e-chat');
  const messages = Array.from({ length: 6 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` }));
  const appended = await call('append_session_messages', { session_id: 'e2e-chat', messages });
  assert.equal(appended.appended.length, 6);
  assert.equal(appended.session.message_count, 6);
  const page = await call('get_session', { session_id: 'e2e-chat', limit: 4 });
  assert.equal(page.messages.length, 4);
  const rest = await call('get_session', { session_id: 'e2e-chat', cursor: page.next_cursor });
  assert.equal(rest.messages.length, 2);
  const { sessions } = await call('list_sessions');
  assert.ok(sessions.some((s) => s.id === 'e2e-chat'));
  const compacted = await call('compact_session', { session_id: 'e2e-chat', summary: 'Six turns about the e2e test.', keep_last: 2 });
  assert.equal(compacted.compacted, 4);
  assert.equal(compacted.session.message_count, 3);
  await call('delete_session', { session_id: 'e2e-chat' });
  const gone = await callError('get_session', { session_id: 'e2e-chat' });
  assert.match(gone, /e2e-chat/);
});

test('bad arguments are tool errors and the session goes on', async () => {
  assert.match(await callError('get_run', { run_id: '../../etc/passwd' }), /run id/);
  assert.match(await callError('launch_run', { target: 'hello', wait_seconds: 600 }), /wait_seconds/);
  assert.match(await callError('launch_run', { target: 'nope' }), /nope/);
  await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }));
  await call('list_targets');
});

test('a resource subscription is told when another process changes the run', async () => {
  const parked = await call('launch_run', { target: 'confirm', wait_seconds: 30 });
  assert.equal(parked.status, 'waiting');
  const uri = `cairn://runs/${parked.id}`;
  const updates = [];
  let notify;
  const seen = new Promise((r) => { notify = r; });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
    if (n.params.uri === uri) notify();
  });
  await client.subscribeResource({ uri });
  const read = await client.readResource({ uri });
  assert.equal(JSON.parse(read.contents[0].text).status, 'waiting');

  // Another process answers the question.
  execFileSync(bin, ['answer', parked.id, 'yes'], { cwd: workspace, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
  await seen;
  assert.ok(updates.includes(uri));
  const done = await until('the answered run to succeed', async () => {
    const r = await call('get_run', { run_id: parked.id });
    return r.status === 'succeeded' && r;
  });
  assert.equal(done.result, 'yes');
  await client.unsubscribeResource({ uri });
  assert.deepEqual(clientErrors.map(String), []);
});

test('streamable HTTP serves the same tools, refuses foreign origins and wants the token', async () => {
  const tokenFile = join(tmp, 'token');
  writeFileSync(tokenFile, 'e2e-secret\n', { mode: 0o600 });
  const child = spawn(bin, ['serve', '--http', '127.0.0.1:0', '--token-file', tokenFile], { cwd: workspace, env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    child.stderr.on('data', (d) => {
      log += d.toString();
      const m = log.match(/(http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`serve --http exited with ${code}: ${log}`)));
  });
  try {
    const noToken = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(noToken.status, 401);
    const foreign = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', origin: 'https://evil.example', authorization: 'Bearer e2e-secret' }, body: '{}' });
    assert.equal(foreign.status, 403);

    const http = new Client({ name: 'cairn-e2e-http', version: '1.0.0' });
    const httpErrors = [];
    http.onerror = (e) => httpErrors.push(e);
    await http.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: 'Bearer e2e-secret' } } }));
    const { tools } = await http.listTools();
    assert.equal(tools.length, EXPECTED_TOOLS.length);
    const res = await http.callTool({ name: 'launch_run', arguments: { target: 'hello', wait_seconds: 30 } });
    assert.equal(res.structuredContent.status, 'succeeded');
    // Progress over HTTP: each call's notifications come on its own
    // response stream, before its response, even with calls in parallel.
    let seen = 0;
    const runs = await Promise.all(Array.from({ length: 6 }, () =>
      http.callTool({ name: 'launch_run', arguments: { target: 'hello', wait_seconds: 30 } }, undefined, { onprogress: () => { seen++; } })));
    for (const r of runs) assert.equal(r.structuredContent.status, 'succeeded');
    assert.ok(seen >= 6, 'progress over HTTP');
    assert.deepEqual(httpErrors.map(String), [], 'the HTTP client reported errors');
    await http.close();
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
});
