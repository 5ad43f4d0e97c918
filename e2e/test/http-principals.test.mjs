// End-to-end tests of principals over streamable HTTP, with the official
// MCP TypeScript client: each named bearer token (serve --http
// --add-token NAME) is a principal, agent:NAME, whatever name its client
// gives; and a run's question reaches the person through elicitation over
// HTTP as over stdio.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { elicitedRun, sharedStore, stopWorkers, until } from '../lib/helpers.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'cairn-http-principals-'));
const workspace = join(tmp, 'ws');
const state = join(tmp, 'state');
const WORKFLOWS_DIR = join(repo, 'mcp', 'e2e', 'testdata', 'workflows');
const APPROVE = 'name: approve\nsteps:\n  - id: ok\n    ask: "Ship it?"\n    choices: ["yes", "no"]\n    for: human\nresult: ${{ steps.ok.answer }}\n';

let bin;
let server; // the running serve --http: { child, url }
const tokens = {}; // token name -> token
const open = [];

function env() {
  return { ...process.env, CAIRN_STATE: state, HOME: tmp };
}

function cli(...args) {
  const r = spawnSync(bin, args, { cwd: workspace, env: env(), encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// serve starts `mcp-host serve --http` in cwd, adding the token NAME
// (when given) and recording the token it prints.
async function serve(name, cwd = workspace) {
  const args = ['serve', '--http', '127.0.0.1:0', ...(name ? ['--add-token', name] : [])];
  const child = spawn(bin, args, { cwd, env: env(), stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const url = await new Promise((res, rej) => {
    child.stderr.on('data', (d) => {
      log += d.toString();
      const u = log.match(/serving MCP at (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      const t = name && log.match(new RegExp(`new token "${name}"[^\\n]*\\n[^\\n]*Authorization: Bearer ([0-9a-f]+)`));
      if (u && (!name || t)) {
        if (t) tokens[name] = t[1];
        res(u[1]);
      }
    });
    child.on('exit', (code) => rej(new Error(`serve --http exited with ${code}: ${log}`)));
  });
  return { child, url };
}

async function stop(s) {
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  await exited;
}

// connect opens a client with the token NAME. Every client gives the same
// client name: the token, not the name, is the principal. With onElicit
// the client offers elicitation and answers with it.
async function connect(token, onElicit, url = server.url) {
  const client = new Client({ name: 'same-editor', version: '1.0.0' }, onElicit ? { capabilities: { elicitation: {} } } : undefined);
  if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
  const errors = [];
  client.onerror = (e) => errors.push(e);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${tokens[token]}` } } }));
  open.push(client);
  const call = async (tool, args = {}) => {
    const res = await client.callTool({ name: tool, arguments: args });
    assert.notEqual(res.isError, true, `${token} ${tool} failed: ${res.content?.[0]?.text}`);
    return res.structuredContent;
  };
  const refused = async (tool, args) => {
    const res = await client.callTool({ name: tool, arguments: args });
    assert.equal(res.isError, true, `${token} ${tool} should be refused, got ${JSON.stringify(res.structuredContent)}`);
    return res.content[0].text;
  };
  return { client, call, refused, errors };
}

before(async () => {
  mkdirSync(join(workspace, '.cairn', 'workflows'), { recursive: true });
  mkdirSync(state, { recursive: true, mode: 0o700 });
  copyFileSync(join(WORKFLOWS_DIR, 'hello.yaml'), join(workspace, '.cairn', 'workflows', 'hello.yaml'));
  writeFileSync(join(workspace, '.cairn', 'workflows', 'approve.yaml'), APPROVE);
  if (sharedStore('ws')) writeFileSync(join(workspace, '.cairn', 'config.yaml'), sharedStore('ws'));
  bin = process.env.MCP_HOST_BIN;
  if (!bin) {
    bin = join(tmp, 'mcp-host');
    execFileSync('go', ['build', '-o', bin, './cmd/mcp-host'], { cwd: repo, stdio: 'inherit' });
  }
  assert.ok(existsSync(bin), `no mcp-host binary at ${bin}`);
  // Two named tokens in the state root's http-tokens: the second serve
  // accepts both.
  await stop(await serve('A'));
  server = await serve('B');
});

after(async () => {
  for (const c of open) await c.close().catch(() => {});
  if (server) await stop(server);
  if (bin) await stopWorkers(bin, workspace, env());
  rmSync(tmp, { recursive: true, force: true });
});

test('two named tokens are two principals: B cannot touch what A created; A can', async () => {
  const a = await connect('A');
  const b = await connect('B');
  const { automation } = await a.call('create_automation', { key: 'a-nightly', target: 'hello', cron: '0 3 * * *' });
  assert.equal(automation.owner, 'agent:A');
  const id = automation.id;

  for (const [tool, args] of [
    ['update_automation', { id, target: 'approve' }],
    ['update_automation', { id, enabled: false, note: 'paused by B' }],
    ['delete_automation', { id }],
    ['trigger_automation', { id }],
  ]) {
    const msg = await b.refused(tool, args);
    assert.match(msg, /agents\.edit_others/, `B ${tool} ${JSON.stringify(args)}: ${msg}`);
  }
  const mineB = await b.call('list_automations');
  assert.equal(mineB.owner, 'agent:B');
  assert.deepEqual(mineB.automations, []);

  const list = cli('automations', 'list');
  assert.equal(list.code, 0, list.err);
  assert.match(list.out, /a-nightly.*agent:A/);
  const listed = JSON.parse(cli('--json', 'automations', 'list').out);
  const row = (listed.automations ?? listed).find((x) => x.key === 'a-nightly');
  assert.ok(row && row.owner === 'agent:A' && row.enabled && row.target === 'hello', JSON.stringify(row));

  const paused = await a.call('update_automation', { id, enabled: false, note: 'paused by A' });
  assert.equal(paused.enabled, false);
  await a.call('update_automation', { id, enabled: true });
  const fired = await a.call('trigger_automation', { id });
  assert.ok(fired.run_id ?? fired.run?.id, JSON.stringify(fired));
  const mineA = await a.call('list_automations');
  assert.deepEqual(mineA.automations.map((x) => x.key), ['a-nightly']);
  await a.call('delete_automation', { id });
  const ran = await a.call('launch_run', { target: 'hello', wait_seconds: 30 });
  assert.equal(ran.trigger.principal, 'agent:A');
  const shown = cli('runs', 'show', ran.id);
  assert.equal(shown.code, 0, shown.err);
  assert.match(shown.out, /by agent:A/);

  const audit = cli('--json', 'audit');
  assert.equal(audit.code, 0, audit.err);
  const entries = JSON.parse(audit.out).entries;
  const by = (principal, tool) => entries.filter((x) => x.principal === principal && x.tool === tool);
  assert.equal(by('agent:A', 'create_automation')[0]?.outcome, 'ok', audit.out);
  assert.equal(by('agent:A', 'delete_automation')[0]?.outcome, 'ok', audit.out);
  assert.equal(by('agent:A', 'trigger_automation')[0]?.outcome, 'ok', audit.out);
  assert.equal(by('agent:A', 'launch_run')[0]?.subject, ran.id, audit.out);
  const refusedB = [...by('agent:B', 'update_automation'), ...by('agent:B', 'delete_automation'), ...by('agent:B', 'trigger_automation')];
  assert.equal(refusedB.length, 4, audit.out);
  for (const x of refusedB) {
    assert.equal(x.outcome, 'refused');
    assert.equal(x.subject, 'agents.edit_others');
  }
  const connA = by('agent:A', 'create_automation')[0].connection;
  assert.match(connA ?? '', /^conn_/);
  assert.ok(refusedB.every((x) => /^conn_/.test(x.connection) && x.connection !== connA), 'each HTTP session is a connection of its own');
  assert.ok(!entries.some((x) => x.principal === 'agent:same-editor'), 'no call is the client name\'s');
  assert.deepEqual([...a.errors, ...b.errors].map(String), []);
});

test('over HTTP, a client with an elicitation handler is asked the question of a run it launched; the answer is the human\'s', async () => {
  const a = await connect('A');
  const parked = await a.call('launch_run', { target: 'approve', wait_seconds: 30 });
  assert.equal(parked.status, 'waiting');
  assert.match(await a.refused('answer_run', { run_id: parked.id, answer: 'yes' }), /agents\.answer/);
  await a.call('cancel_run', { run_id: parked.id });

  const asked = [];
  const e = await connect('B', async (req) => {
    asked.push(req.params);
    return { action: 'accept', content: { answer: 'yes' } };
  });
  const run = await e.call('launch_run', { target: 'approve' });
  assert.equal(run.trigger.principal, 'agent:B');
  await elicitedRun(e, run, asked);

  const entries = JSON.parse(cli('--json', 'audit').out).entries;
  const human = entries.find((x) => x.tool === 'elicitation/create' && x.subject === run.id);
  assert.equal(human?.principal, 'human', JSON.stringify(entries));
  assert.equal(human?.outcome, 'ok');
  const launch = entries.find((x) => x.tool === 'launch_run' && x.subject === run.id);
  assert.equal(launch?.principal, 'agent:B');
  assert.deepEqual(e.errors.map(String), []);
});

test("over HTTP, under agents.automations: approve, the person approves a token's automation through elicitation", async () => {
  const ws = join(tmp, 'ws-approve');
  mkdirSync(join(ws, '.cairn', 'workflows'), { recursive: true });
  copyFileSync(join(WORKFLOWS_DIR, 'hello.yaml'), join(ws, '.cairn', 'workflows', 'hello.yaml'));
  writeFileSync(join(ws, '.cairn', 'config.yaml'), 'agents:\n  automations: approve\n' + sharedStore('approve'));
  const other = await serve(undefined, ws); // the same state root: the same tokens
  try {
    const asked = [];
    const a = await connect('A', async (req) => {
      asked.push(req.params);
      return { action: 'accept', content: { decision: 'approve' } };
    }, other.url);
    const { automation } = await a.call('create_automation', { key: 'a-hourly', target: 'hello', every: '1h' });
    assert.equal(automation.owner, 'agent:A');
    assert.equal(automation.approval, 'pending');
    const enabled = await until('the person to approve it through elicitation', async () => {
      const { automations } = await a.call('list_automations');
      return automations.find((x) => x.id === automation.id && x.enabled && !x.approval);
    });
    assert.ok(enabled);
    assert.equal(asked.length, 1);
    assert.match(asked[0].message, /agent:A .*a-hourly/);
    const audit = JSON.parse(spawnSync(bin, ['--json', 'audit'], { cwd: ws, env: env(), encoding: 'utf8' }).stdout).entries;
    assert.equal(audit.find((x) => x.tool === 'elicitation/create' && x.subject === automation.id)?.principal, 'human');
    assert.equal(audit.find((x) => x.tool === 'create_automation' && x.subject === automation.id)?.principal, 'agent:A', JSON.stringify(audit));
    assert.deepEqual(a.errors.map(String), []);
    await a.client.close();
  } finally {
    await stop(other);
    await stopWorkers(bin, ws, env());
  }
});
