/** The tests' SDK MCP server (stateful, JSON answers), as a bench child process (its own event loop). */
import { startMcpUpstream } from '../support/mcp-upstream.ts';
import type { ReadyMessage } from './protocol.ts';

const mock = await startMcpUpstream({ stateful: true, json: true });
const ready: ReadyMessage = { type: 'ready', url: mock.url };
process.send?.(ready);
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
