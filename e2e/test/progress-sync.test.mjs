// Why mcp-host serve pings before answering a call that sent progress
// (mcp/transport/stdio_sync.go): the official TypeScript client handles a
// notification in a later microtask but a response at once, so a progress
// notification that arrives in the same chunk as its call's response finds
// the call's progress handler gone ("unknown token"), however strictly the
// server wrote it first. A ping between them, answered before the response
// is written, lets the client handle the progress first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const server = resolve(here, '..', 'lib', 'progress-server.mjs');

async function callWithProgress(sync) {
  const client = new Client({ name: 'progress-sync', version: '1.0.0' });
  const errors = [];
  client.onerror = (e) => errors.push(String(e));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [server], env: { ...process.env, SYNC: sync } }));
  const progress = [];
  try {
    await client.request({ method: 'tools/call', params: { name: 't', arguments: {} } }, CallToolResultSchema, { onprogress: (p) => progress.push(p) });
  } finally {
    await client.close();
  }
  return { errors, progress };
}

test('progress written just before its response in one chunk is lost by the TypeScript client', async () => {
  const { errors, progress } = await callWithProgress('none');
  assert.equal(progress.length, 0, 'the client handled the progress: the sync ping would not be needed');
  assert.ok(errors.some((e) => e.includes('unknown token')), `client errors: ${errors}`);
});

test('a ping answered between progress and response lets the client handle the progress', async () => {
  const { errors, progress } = await callWithProgress('ping');
  assert.equal(progress.length, 1);
  assert.deepEqual(errors, []);
});
