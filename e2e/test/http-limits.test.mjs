// End-to-end tests of the HTTP limits with the official MCP TypeScript
// client: `serve --http` wants a token by default; a flood of initialize
// requests (twice the session table) never locks a new client out; and
// 150 clients that stall mid-body neither grow the server's memory past
// 100 MB nor stop another client's calls.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, readFileSync, rmSync, existsSync, statSync } from 'node:fs';
import { connect as dial } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { stopWorkers } from '../lib/helpers.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'cairn-http-limits-'));
const workspace = join(tmp, 'ws');
// Each serve has a state root of its own, so each makes (and prints) its
// token.
const states = [];
const WORKFLOWS_DIR = join(repo, 'mcp', 'e2e', 'testdata', 'workflows');
const INIT = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'flood', version: '1' } } });

let bin;
const servers = [];
const open = [];

function env(state) {
  return { ...process.env, CAIRN_STATE: state, HOME: tmp };
}

// serve starts `mcp-host serve --http 127.0.0.1:0` (no token flags: the
// default) on a fresh state root and returns its child, URL, state root
// and the token it printed.
async function serve() {
  const state = join(tmp, `state-${states.length}`);
  mkdirSync(state, { mode: 0o700 });
  states.push(state);
  const child = spawn(bin, ['serve', '--http', '127.0.0.1:0'], { cwd: workspace, env: env(state), stdio: ['ignore', 'ignore', 'pipe'] });
  servers.push(child);
  let log = '';
  return new Promise((res, rej) => {
    child.stderr.on('data', (d) => {
      log += d.toString();
      const u = log.match(/serving MCP at (http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      const t = log.match(/Authorization: Bearer ([0-9a-f]+)/);
      if (u && t) res({ child, url: u[1], token: t[1], state, log: () => log });
    });
    child.on('exit', (code) => rej(new Error(`serve --http exited with ${code}: ${log}`)));
  });
}

// client connects the TypeScript SDK's client with token.
async function client(url, token) {
  const c = new Client({ name: 'limits-e2e', version: '1.0.0' });
  const errors = [];
  c.onerror = (e) => errors.push(e);
  await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  open.push(c);
  return { c, errors };
}

// rss is a process's resident set size in bytes, from /proc.
function rss(pid) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB$/m);
  assert.ok(m, `no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

const mib = (n) => (n / (1 << 20)).toFixed(1);

before(() => {
  mkdirSync(join(workspace, '.cairn', 'workflows'), { recursive: true });
  copyFileSync(join(WORKFLOWS_DIR, 'hello.yaml'), join(workspace, '.cairn', 'workflows', 'hello.yaml'));
  bin = process.env.MCP_HOST_BIN;
  if (!bin) {
    bin = join(tmp, 'mcp-host');
    execFileSync('go', ['build', '-o', bin, './cmd/mcp-host'], { cwd: repo, stdio: 'inherit' });
  }
  assert.ok(existsSync(bin), `no mcp-host binary at ${bin}`);
});

after(async () => {
  for (const c of open) await c.close().catch(() => {});
  for (const child of servers) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  if (bin) for (const state of states) await stopWorkers(bin, workspace, env(state));
  rmSync(tmp, { recursive: true, force: true });
});

test('serve --http makes a token (0600) and refuses a request without it with 401', async () => {
  const s = await serve();
  assert.match(s.log(), /new token/);
  assert.equal(statSync(join(s.state, 'http-tokens')).mode & 0o777, 0o600);
  const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: INIT });
  assert.equal(res.status, 401);
  assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
  const wrong = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer 0000' }, body: INIT });
  assert.equal(wrong.status, 401);
  const { c, errors } = await client(s.url, s.token);
  const { tools } = await c.listTools();
  assert.ok(tools.some((t) => t.name === 'launch_run'));
  assert.deepEqual(errors.map(String), []);
});

test('after 2,000 initialize requests a new client connects and calls', async (t) => {
  const s = await serve();
  let next = 0;
  const statuses = {};
  const flood = async () => {
    while (next < 2000) {
      next++;
      const res = await fetch(s.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${s.token}` }, body: INIT });
      await res.arrayBuffer();
      statuses[res.status] = (statuses[res.status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: 4 }, flood));
  assert.deepEqual(statuses, { 200: 2000 }, 'every initialize of the flood is served');
  const start = performance.now();
  const { c, errors } = await client(s.url, s.token);
  const took = performance.now() - start;
  const res = await c.callTool({ name: 'list_targets', arguments: {} });
  assert.notEqual(res.isError, true);
  assert.ok(res.structuredContent.targets.some((t) => t.name === 'hello'));
  assert.deepEqual(errors.map(String), []);
  // The bound is 1 s; the figure is reported, not asserted (a
  // shared machine's timings are noise). A client locked out fails above.
  t.diagnostic(`after 2,000 initialize requests a new TypeScript client connected in ${took.toFixed(0)} ms`);
});

test('150 stalled request bodies: the server stays under 100 MB of RSS and another client\'s calls succeed', async (t) => {
  const s = await serve();
  const { hostname, port } = new URL(s.url);
  const before = rss(s.child.pid);
  const chunk = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + 'a'.repeat(1 << 20));
  const sockets = [];
  await Promise.all(Array.from({ length: 150 }, () => new Promise((res) => {
    const sock = dial({ host: hostname, port: Number(port) }, () => {
      sock.write(`POST /mcp HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer ${s.token}\r\nContent-Length: 4000000\r\n\r\n`);
      // A refused body is answered and its connection closed: the write
      // ends either way; the rest of the 4 MB never comes.
      sock.write(chunk, () => res());
    });
    sock.on('error', () => res());
    sock.on('close', () => res());
    sockets.push(sock);
  })));
  try {
    const { c, errors } = await client(s.url, s.token);
    const listed = await c.callTool({ name: 'list_targets', arguments: {} });
    assert.notEqual(listed.isError, true);
    const ran = await c.callTool({ name: 'launch_run', arguments: { target: 'hello', wait_seconds: 30 } });
    assert.equal(ran.structuredContent?.status, 'succeeded', JSON.stringify(ran));
    assert.deepEqual(errors.map(String), []);
    const held = sockets.filter((x) => !x.destroyed).length;
    const now = rss(s.child.pid);
    t.diagnostic(`server RSS ${mib(before)} MiB before, ${mib(now)} MiB with 150 stalled bodies (${held} of their sockets not yet seen closed by this client)`);
    assert.ok(now < 100e6, `server RSS ${now} bytes with 150 stalled bodies, want under 100 MB`);
  } finally {
    for (const x of sockets) x.destroy();
  }
});
