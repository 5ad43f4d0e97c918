// A minimal stdio MCP server for progress-sync.test.mjs: it answers a
// tools/call with one progress notification and the response, written
// either in one write (SYNC=none) or with a ping between them whose answer
// it awaits first (SYNC=ping), as mcp-host serve's sync ping does.
import { createInterface } from 'node:readline';

const sync = process.env.SYNC ?? 'none';
const waiting = new Map(); // ping id -> resolve
let seq = 0;
const line = (m) => JSON.stringify(m) + '\n';

createInterface({ input: process.stdin }).on('line', async (l) => {
  const m = JSON.parse(l);
  if (m.method === undefined && waiting.has(m.id)) {
    waiting.get(m.id)();
    return;
  }
  if (m.method === 'initialize') {
    process.stdout.write(line({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'progress-server', version: '1' } } }));
  } else if (m.method === 'tools/call') {
    const progress = line({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: m.params._meta.progressToken, progress: 1 } });
    const response = line({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'done' }] } });
    if (sync === 'ping') {
      const id = `sync-${++seq}`;
      const answered = new Promise((res) => waiting.set(id, res));
      process.stdout.write(progress + line({ jsonrpc: '2.0', id, method: 'ping' }));
      await answered;
      process.stdout.write(response);
    } else {
      process.stdout.write(progress + response);
    }
  } else if (m.id !== undefined) {
    process.stdout.write(line({ jsonrpc: '2.0', id: m.id, result: {} }));
  }
});
