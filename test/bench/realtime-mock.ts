/** The mock realtime provider of the tests, as a bench child process (its own event loop). */
import { startMockRealtime } from '../support/mock-realtime.ts';
import type { ReadyMessage } from './protocol.ts';

const mock = await startMockRealtime();
const ready: ReadyMessage = { type: 'ready', url: mock.url };
process.send?.(ready);
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
