/**
 * The end of a gateway request's record: every hook settles it (the writers: pricing sets the
 * cost) before any hook completes (the readers: logs, metrics, traces), whatever the hooks' order,
 * and one hook's failure stops no other.
 */
import { describe, expect, it } from 'vitest';
import { completeHooks } from '../../../../layers/core/src/gateway/flight.ts';
import type { GatewayHook, GatewayRecord } from '../../../../layers/core/src/kernel/lifecycle.ts';

const record = (): GatewayRecord => ({
  id: 'r-1',
  traceId: 't-1',
  endpoint: 'chatComplete',
  method: 'POST',
  path: '/v1/chat/completions',
  startedAt: 0,
  metadata: {},
  stream: false,
  cacheStatus: 'DISABLED',
});

describe('completeHooks', () => {
  it('settles the record in every hook before any hook completes, whatever their order', () => {
    const seen: (number | undefined)[] = [];
    const reader: GatewayHook = { name: 'log', complete: (r) => void seen.push(r.costMicros) };
    const writer: GatewayHook = { name: 'pricing', settle: (r) => void (r.costMicros = 42) };
    completeHooks([reader, writer], record(), { error: () => {} });
    expect(seen).toEqual([42]);
  });

  it('logs a failing hook by name and runs the others, a rejected complete included', async () => {
    const errors: string[] = [];
    const ran: string[] = [];
    const hooks: GatewayHook[] = [
      {
        name: 'bad-settle',
        settle: () => {
          throw new Error('x');
        },
      },
      { name: 'bad-complete', complete: () => Promise.reject(new Error('y')) },
      { name: 'good', settle: () => void ran.push('settle'), complete: () => void ran.push('complete') },
    ];
    completeHooks(hooks, record(), { error: (msg) => void errors.push(msg) });
    await new Promise((r) => setImmediate(r));
    expect(ran).toEqual(['settle', 'complete']);
    expect(errors.sort()).toEqual(['bad-complete failed', 'bad-settle failed']);
  });
});
