// Hand-off: the official TypeScript client closes `mcp-host serve` while a
// run's step is in flight. serve must exit within 2 s of its stdin closing
// (the SDK sends SIGTERM after 2 s and SIGKILL 2 s later), the step goes on
// under its supervisor, and a background worker takes the run over: the
// step runs once and the run succeeds.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { stopWorkers, until } from '../lib/helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'cairn-handoff-'));
const workspace = join(tmp, 'ws');
const state = join(tmp, 'state');

// The step takes 20 s (the figure): it outlives the client, its
// serve and the SDK's SIGTERM and SIGKILL deadlines by far.
const STEP_SECONDS = 20;
const WORKFLOW = `name: outlive
description: One step that outlives the client
steps:
  - id: long
    shell: 'echo "start $$" >> marks.txt; sleep ${STEP_SECONDS}; echo "end $$" >> marks.txt'
result: done
`;

let bin;

function env() {
  return { ...process.env, CAIRN_STATE: state, HOME: tmp };
}

function cli(...args) {
  return execFileSync(bin, args, { cwd: workspace, env: env(), stdio: ['ignore', 'pipe', 'pipe'] }).toString();
}

after(async () => {
  if (bin) await stopWorkers(bin, workspace, env());
  rmSync(tmp, { recursive: true, force: true });
});

test('closing the client hands a run in flight to a worker: serve exits within 2 s, the step runs once', async () => {
  mkdirSync(join(workspace, '.cairn', 'workflows'), { recursive: true });
  mkdirSync(state, { recursive: true, mode: 0o700 });
  writeFileSync(join(workspace, '.cairn', 'workflows', 'outlive.yaml'), WORKFLOW);
  bin = process.env.MCP_HOST_BIN;
  if (!bin) {
    bin = join(tmp, 'mcp-host');
    execFileSync('go', ['build', '-o', bin, './cmd/mcp-host'], { cwd: repo, stdio: 'inherit' });
  }
  assert.ok(existsSync(bin), `no mcp-host binary at ${bin}`);

  const transport = new StdioClientTransport({ command: bin, args: ['serve'], cwd: workspace, env: env(), stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d.toString(); });
  const client = new Client({ name: 'cairn-handoff', version: '1.0.0' });
  await client.connect(transport);
  const serve = transport._process; // the SDK's child process: its exit is what we measure
  assert.ok(serve, 'the transport has no child process');
  const exited = new Promise((resolve) => {
    serve.once('exit', (code, signal) => resolve({ code, signal, at: performance.now() }));
  });

  const launched = await client.callTool({ name: 'launch_run', arguments: { target: 'outlive' } });
  assert.notEqual(launched.isError, true, launched.content?.[0]?.text);
  const id = launched.structuredContent.id;
  await until('the step to start', () => existsSync(join(workspace, 'marks.txt')));

  const closedAt = performance.now();
  await client.close();
  const { code, signal, at } = await exited;
  const took = at - closedAt;
  assert.equal(signal, null, `serve was killed by ${signal}; stderr:\n${stderr}`);
  assert.equal(code, 0, `serve exited with ${code}; stderr:\n${stderr}`);
  assert.ok(took < 2000, `serve took ${Math.round(took)} ms to exit after its stdin closed (want under 2000); stderr:\n${stderr}`);
  // The step outlived the client: it has not ended yet.
  assert.doesNotMatch(readFileSync(join(workspace, 'marks.txt'), 'utf8'), /end/);

  const run = await until('the worker to finish the run', () => {
    const r = JSON.parse(cli('--json', 'runs', 'show', id));
    return ['succeeded', 'failed', 'cancelled'].includes(r.status) ? r : null;
  }, { tries: 900, every: 100 });
  assert.equal(run.status, 'succeeded', `run ended ${run.status}: ${run.error}`);
  const marks = readFileSync(join(workspace, 'marks.txt'), 'utf8').trim().split('\n');
  assert.equal(marks.length, 2, `the step ran more than once:\n${marks.join('\n')}`);
  const [start, end] = marks;
  assert.match(start, /^start \d+$/);
  assert.equal(end, start.replace('start', 'end'), `the step's attempts overlap:\n${marks.join('\n')}`);
  // The run records the attempt that ran: its pid is the marks' one.
  assert.equal(run.steps[0].pid, Number(start.split(' ')[1]), JSON.stringify(run.steps[0]));
  console.log(`serve exited ${Math.round(took)} ms after its stdin closed; the worker finished run ${id}`);
});
