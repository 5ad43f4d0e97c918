// End-to-end tests of principals, the agents: policy, human questions,
// elicitation and the audit trail, driven by the official MCP TypeScript
// client: several clients (agents) on one workspace, each its own
// `mcp-host serve`, and the CLI as the person.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { elicitedRun, sharedStore, stopWorkers, until } from '../lib/helpers.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'cairn-principals-'));
const workspace = join(tmp, 'ws');
const state = join(tmp, 'state');
const WORKFLOWS_DIR = join(repo, 'mcp', 'e2e', 'testdata', 'workflows');

// Workflows of this test: a question only a person answers, a target
// agents may not launch, and a shell step with unquoted input.
const FILES = {
  'approve.yaml': 'name: approve\nsteps:\n  - id: ok\n    ask: "Ship it?"\n    choices: ["yes", "no"]\n    for: human\nresult: ${{ steps.ok.answer }}\n',
  'secret.yaml': 'name: secret\nsteps:\n  - id: s\n    exec: ["echo", "the secret target ran"]\n',
  'greet.yaml': 'name: greet\ninput:\n  type: object\n  properties:\n    who: {type: string, default: world}\nsteps:\n  - id: hi\n    shell: echo hello ${{ input.who }}\n',
};
const CONFIG = 'agents:\n  launch: [hello, confirm, approve, greet]\n';

let bin;
const open = [];

function env() {
  return { ...process.env, CAIRN_STATE: state, HOME: tmp };
}

// cli runs mcp-host as the person and returns its exit code and output.
function cli(...args) {
  return cliIn(workspace, ...args);
}

function cliIn(cwd, ...args) {
  const r = spawnSync(bin, args, { cwd, env: env(), encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

// connect starts `mcp-host serve` for a client named name. With onElicit
// the client offers elicitation and answers with it.
async function connect(name, onElicit, cwd = workspace) {
  const transport = new StdioClientTransport({ command: bin, args: ['serve'], cwd, env: env(), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  const client = new Client({ name, version: '1.0.0' }, onElicit ? { capabilities: { elicitation: {} } } : undefined);
  if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
  await client.connect(transport);
  open.push(client);
  const call = async (tool, args = {}) => {
    const res = await client.callTool({ name: tool, arguments: args });
    assert.notEqual(res.isError, true, `${name} ${tool} failed: ${res.content?.[0]?.text}`);
    return res.structuredContent;
  };
  const refused = async (tool, args) => {
    const res = await client.callTool({ name: tool, arguments: args });
    assert.equal(res.isError, true, `${name} ${tool} should be refused, got ${JSON.stringify(res.structuredContent)}`);
    return res.content[0].text;
  };
  return { client, call, refused, stderr: () => stderr };
}

before(() => {
  mkdirSync(join(workspace, '.cairn', 'workflows'), { recursive: true });
  mkdirSync(state, { recursive: true, mode: 0o700 });
  for (const name of ['hello.yaml', 'confirm.yaml']) {
    copyFileSync(join(WORKFLOWS_DIR, name), join(workspace, '.cairn', 'workflows', name));
  }
  for (const [name, body] of Object.entries(FILES)) {
    writeFileSync(join(workspace, '.cairn', 'workflows', name), body);
  }
  writeFileSync(join(workspace, '.cairn', 'config.yaml'), CONFIG + sharedStore('ws'));
  bin = process.env.MCP_HOST_BIN;
  if (!bin) {
    bin = join(tmp, 'mcp-host');
    execFileSync('go', ['build', '-o', bin, './cmd/mcp-host'], { cwd: repo, stdio: 'inherit' });
  }
  assert.ok(existsSync(bin), `no mcp-host binary at ${bin}`);
});

after(async () => {
  for (const c of open) await c.close().catch(() => {});
  if (bin) await stopWorkers(bin, workspace, env());
  rmSync(tmp, { recursive: true, force: true });
});

test("an agent cannot change, pause, delete or fire another agent's automations or the human's", async () => {
  const a = await connect('agent-a');
  const b = await connect('agent-b');
  const human = cli('--json', 'automations', 'create', '--key', 'human-nightly', '--target', 'hello', '--cron', '0 3 * * *');
  assert.equal(human.code, 0, human.err);
  const humanID = JSON.parse(human.out).automation.id;
  assert.equal(JSON.parse(human.out).automation.owner, 'human');
  const { automation: bs } = await b.call('create_automation', { key: 'b-nightly', target: 'hello', cron: '0 4 * * *' });
  assert.equal(bs.owner, 'agent:agent-b');

  for (const id of [bs.id, humanID]) {
    for (const [tool, args] of [
      ['update_automation', { id, target: 'confirm' }],
      ['update_automation', { id, enabled: false, note: 'paused by agent a' }],
      ['delete_automation', { id }],
      ['trigger_automation', { id }],
    ]) {
      const msg = await a.refused(tool, args);
      assert.match(msg, /agents\.edit_others/, `${tool} ${JSON.stringify(args)}: ${msg}`);
    }
  }
  const owner = await a.refused('create_automation', { key: 'x', target: 'hello', every: '1h', owner: 'agent:agent-b' });
  assert.match(owner, /cannot choose the owner/);
  assert.match(owner, /agents\.edit_others/);

  // Nothing changed: both still there, enabled, untouched.
  const all = await b.call('list_automations', { all: true });
  for (const id of [bs.id, humanID]) {
    const x = all.automations.find((y) => y.id === id);
    assert.ok(x && x.enabled && x.target === 'hello' && x.revision === 1, JSON.stringify(x));
  }

  // An agent's automation stays its own after it reconnects.
  const { automation: as } = await a.call('create_automation', { key: 'a-hourly', target: 'hello', every: '1h' });
  assert.equal(as.owner, 'agent:agent-a');
  await a.client.close();
  const again = await connect('agent-a');
  const paused = await again.call('update_automation', { id: as.id, enabled: false, note: 'after reconnecting' });
  assert.equal(paused.enabled, false);
  const mine = await again.call('list_automations');
  assert.deepEqual(mine.automations.map((x) => x.key), ['a-hourly']);
});

test('a target outside agents.launch is refused to launch_run; the CLI still runs it', async () => {
  const a = await connect('agent-a');
  const msg = await a.refused('launch_run', { target: 'secret' });
  assert.match(msg, /agents\.launch/);
  const ok = await a.call('launch_run', { target: 'hello', wait_seconds: 30 });
  assert.equal(ok.trigger.principal, 'agent:agent-a');
  const run = cli('run', 'secret');
  assert.equal(run.code, 0, run.err);
  assert.match(run.out, /the secret target ran/);
});

test('answer_run refuses a question for a person; the elicitation answer is the human\'s', async () => {
  const a = await connect('agent-a');
  const parked = await a.call('launch_run', { target: 'approve', wait_seconds: 30 });
  assert.equal(parked.status, 'waiting');
  assert.equal(parked.question.for, 'human');
  const msg = await a.refused('answer_run', { run_id: parked.id, answer: 'yes' });
  assert.match(msg, /for a person/);
  assert.match(msg, /agents\.answer/);
  assert.equal((await a.call('get_run', { run_id: parked.id })).status, 'waiting');
  await a.call('cancel_run', { run_id: parked.id });

  const asked = [];
  const e = await connect('editor', async (req) => {
    asked.push(req.params);
    return { action: 'accept', content: { answer: 'yes' } };
  });
  const run = await e.call('launch_run', { target: 'approve' });
  const answer = await elicitedRun(e, run, asked);
  assert.equal(answer.text, 'yes');

  const audit = cli('--json', 'audit');
  assert.equal(audit.code, 0, audit.err);
  const entries = JSON.parse(audit.out).entries;
  const human = entries.find((x) => x.tool === 'elicitation/create' && x.subject === run.id);
  assert.ok(human, audit.out);
  assert.equal(human.principal, 'human');
  assert.equal(human.outcome, 'ok');
  const refusal = entries.find((x) => x.tool === 'answer_run' && x.principal === 'agent:agent-a');
  assert.ok(refusal, audit.out);
  assert.equal(refusal.outcome, 'refused');
  assert.equal(refusal.subject, 'agents.answer');
  assert.match(refusal.args_digest, /^sha256:[0-9a-f]{64}$/);
  assert.ok(!audit.out.includes('"answer": "yes"'), 'the audit keeps a digest, not the arguments');
  const launch = entries.find((x) => x.tool === 'launch_run' && x.subject === run.id);
  assert.equal(launch?.principal, 'agent:editor');
  assert.match(launch?.connection ?? '', /^conn_/);
});

test('a declined prompt leaves the person\'s question open; mcp-host answer is the human\'s', async () => {
  const asked = [];
  const e = await connect('decliner', async (req) => {
    asked.push(req.params);
    return { action: 'decline' };
  });
  const run = await e.call('launch_run', { target: 'approve' });
  await until('the question to be put to the person', () => asked.length > 0);
  const waiting = await e.call('get_run', { run_id: run.id });
  assert.equal(waiting.status, 'waiting');
  assert.equal(waiting.question.for, 'human');
  const answered = cli('answer', run.id, 'yes');
  assert.equal(answered.code, 0, answered.err);
  const done = await until('the CLI answer to finish the run', async () => {
    const r = await e.call('get_run', { run_id: run.id });
    return r.status === 'succeeded' && r;
  });
  assert.equal(done.result, 'yes');
  const out = await e.call('read_run_output', { run_id: run.id, limit: 100 });
  const answers = out.records.filter((r) => r.type === 'answer');
  assert.equal(answers.length, 1, JSON.stringify(out.records));
  assert.equal(answers[0].by, 'human');
  assert.equal(asked.length, 1, 'a declined question is not asked again');
  const entries = JSON.parse(cli('--json', 'audit').out).entries;
  assert.ok(!entries.some((x) => x.tool === 'elicitation/create' && x.subject === run.id), 'a declined prompt answers nothing');
});

test('serve and list_targets warn of a shell step with unquoted input, with file and line', async () => {
  const a = await connect('agent-a');
  const { warnings } = await a.call('list_targets');
  const unquoted = /greet\.yaml:8: step "hi": shell: \$\{\{ input\.who \}\}.*shellQuote/;
  assert.ok(warnings?.some((w) => unquoted.test(w)), JSON.stringify(warnings));
  // serve says it on stderr when it starts (written before it reads
  // initialize; the pipe is read on its own, so wait for it).
  const warned = /WARN.*greet\.yaml:8: step \\?"hi\\?": shell: \$\{\{ input\.who \}\}.*shellQuote/;
  await until('serve to warn on stderr', () => warned.test(a.stderr()), { tries: 100 });
});

test('under workflows.unquoted_shell_input: error, serve refuses the workflow: a problem with file and line, launch_run fails', async () => {
  const ws = join(tmp, 'ws-strict');
  mkdirSync(join(ws, '.cairn', 'workflows'), { recursive: true });
  writeFileSync(join(ws, '.cairn', 'workflows', 'greet.yaml'), FILES['greet.yaml']);
  copyFileSync(join(WORKFLOWS_DIR, 'hello.yaml'), join(ws, '.cairn', 'workflows', 'hello.yaml'));
  writeFileSync(join(ws, '.cairn', 'config.yaml'), 'workflows:\n  unquoted_shell_input: error\n' + sharedStore('strict'));
  const a = await connect('agent-a', undefined, ws);
  const { targets, problems } = await a.call('list_targets');
  assert.deepEqual(targets.map((t) => t.name), ['hello']);
  assert.ok(JSON.stringify(problems).includes('greet.yaml:8'), JSON.stringify(problems));
  assert.match(await a.refused('launch_run', { target: 'greet', input: { who: '$(id)' } }), /greet\.yaml:8.*shellQuote/);
  const run = cliIn(ws, 'run', 'greet');
  assert.notEqual(run.code, 0);
  assert.match(run.err, /greet\.yaml:8/);
  await stopWorkers(bin, ws, env());
});

test('every agent action is audited: launch, answer, cancel, automation create/update/trigger/delete, session writes', async () => {
  const c = await connect('agent-c');
  const ran = await c.call('launch_run', { target: 'confirm', wait_seconds: 30 });
  assert.equal(ran.status, 'waiting');
  await c.call('answer_run', { run_id: ran.id, answer: 'yes' });
  const other = await c.call('launch_run', { target: 'confirm', wait_seconds: 30 });
  await c.call('cancel_run', { run_id: other.id });
  const { automation } = await c.call('create_automation', { key: 'c-nightly', target: 'hello', cron: '0 5 * * *' });
  await c.call('update_automation', { id: automation.id, note: 'noted by c' });
  await c.call('trigger_automation', { id: automation.id });
  await c.call('delete_automation', { id: automation.id });
  await c.call('create_session', { session_id: 'c-chat', title: 'C' });
  await c.call('append_session_messages', { session_id: 'c-chat', messages: [1, 2, 3].map((i) => ({ role: 'user', content: `turn ${i}` })) });
  await c.call('compact_session', { session_id: 'c-chat', summary: 'Three turns.', keep_last: 1 });
  await c.call('delete_session', { session_id: 'c-chat' });
  await c.call('list_runs'); // reads are not audited
  await c.call('get_session', { session_id: 'c-chat' }).catch(() => {});

  const audit = cli('--json', 'audit', '--since', '1h');
  assert.equal(audit.code, 0, audit.err);
  const mine = JSON.parse(audit.out).entries.filter((x) => x.principal === 'agent:agent-c');
  const want = [
    ['launch_run', ran.id], ['answer_run', ran.id], ['launch_run', other.id], ['cancel_run', other.id],
    ['create_automation', automation.id], ['update_automation', automation.id], ['trigger_automation', automation.id], ['delete_automation', automation.id],
    ['create_session', 'c-chat'], ['append_session_messages', 'c-chat'], ['compact_session', 'c-chat'], ['delete_session', 'c-chat'],
  ];
  assert.deepEqual(mine.map((x) => [x.tool, x.subject]), want, audit.out);
  for (const x of mine) {
    assert.equal(x.outcome, 'ok', JSON.stringify(x));
    assert.match(x.connection, /^conn_/);
    assert.match(x.args_digest, /^sha256:[0-9a-f]{64}$/);
    assert.ok(!Number.isNaN(Date.parse(x.at)), JSON.stringify(x));
  }
  assert.equal(new Set(mine.map((x) => x.connection)).size, 1, 'one connection');
  assert.ok(!audit.out.includes('turn 1'), 'the audit keeps a digest, not the arguments');
  const text = cli('audit');
  assert.equal(text.code, 0, text.err);
  assert.match(text.out, /agent:agent-c.*cancel_run/);
});

test("under agents.automations: approve an agent's automation waits; the person approves it, through the CLI or elicitation", async () => {
  const ws = join(tmp, 'ws-approve');
  mkdirSync(join(ws, '.cairn', 'workflows'), { recursive: true });
  copyFileSync(join(WORKFLOWS_DIR, 'hello.yaml'), join(ws, '.cairn', 'workflows', 'hello.yaml'));
  writeFileSync(join(ws, '.cairn', 'config.yaml'), 'agents:\n  automations: approve\n' + sharedStore('approve'));

  const a = await connect('agent-a', undefined, ws);
  const { automation } = await a.call('create_automation', { key: 'a-hourly', target: 'hello', every: '1h' });
  assert.equal(automation.approval, 'pending');
  assert.equal(automation.enabled, false);
  const listed = await a.call('list_automations');
  assert.equal(listed.automations[0].approval, 'pending');
  assert.match(await a.refused('trigger_automation', { id: automation.id }), /approve/);
  assert.match(await a.refused('update_automation', { id: automation.id, enabled: true }), /agents\.automations/);
  const list = cliIn(ws, 'automations', 'list');
  assert.match(list.out, /a-hourly.*pending approval/);
  const approved = cliIn(ws, '--json', 'automations', 'approve', 'a-hourly');
  assert.equal(approved.code, 0, approved.err);
  assert.equal(JSON.parse(approved.out).enabled, true);

  const asked = [];
  const e = await connect('editor', async (req) => {
    asked.push(req.params);
    return { action: 'accept', content: { decision: 'approve' } };
  }, ws);
  const { automation: mine } = await e.call('create_automation', { key: 'e-hourly', target: 'hello', every: '1h' });
  assert.equal(mine.approval, 'pending');
  const enabled = await until('the person to approve it through elicitation', async () => {
    const { automations } = await e.call('list_automations');
    return automations.find((x) => x.id === mine.id && x.enabled && !x.approval);
  });
  assert.ok(enabled);
  assert.equal(asked.length, 1);
  assert.match(asked[0].message, /e-hourly/);
  assert.deepEqual(asked[0].requestedSchema.properties.decision.enum, ['approve', 'reject', 'later']);
  const audit = JSON.parse(cliIn(ws, '--json', 'audit').out).entries;
  const human = audit.find((x) => x.tool === 'elicitation/create' && x.subject === mine.id);
  assert.equal(human?.principal, 'human');
});
