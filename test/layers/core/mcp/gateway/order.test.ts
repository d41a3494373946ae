/** A session's requests wait for its GET stream: after initialization (briefly) and after a GET (until it is open). */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { expectStream, GRACE_MS, heldSessions, HOLD_MS, takeTurn } from '../../../../../layers/core/src/mcp/gateway/order.ts';

/** Whether the promise has settled after pending microtasks ran. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe('the order of an MCP session', () => {
  let n = 0;
  let session: string;
  beforeEach(() => {
    vi.useFakeTimers();
    session = `s-${(n += 1)}`;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('holds nothing without a session, or for a session with neither initialization nor GET', async () => {
    expect(await settled(takeTurn(null, 'POST').ready)).toBe(true);
    expect(await settled(takeTurn(session, 'POST').ready)).toBe(true);
  });

  it('a GET holds the requests after it until it is open upstream, not the ones before', async () => {
    const before = takeTurn(session, 'POST');
    const get = takeTurn(session, 'GET');
    const after = takeTurn(session, 'POST');
    expect(await settled(before.ready)).toBe(true);
    expect(await settled(get.ready)).toBe(true);
    expect(await settled(after.ready)).toBe(false);
    get.sent();
    expect(await settled(after.ready)).toBe(true);
    expect(heldSessions()).toBe(0);
  });

  it('a GET whose stream does not open holds for HOLD_MS only', async () => {
    takeTurn(session, 'GET');
    const after = takeTurn(session, 'POST');
    await vi.advanceTimersByTimeAsync(HOLD_MS - 1);
    expect(await settled(after.ready)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(after.ready)).toBe(true);
  });

  it('after initialization a call waits for the GET that comes after it, past GRACE_MS if the GET came in time', async () => {
    expectStream(session);
    const call = takeTurn(session, 'POST');
    expect(await settled(call.ready)).toBe(false);
    const get = takeTurn(session, 'GET');
    await vi.advanceTimersByTimeAsync(GRACE_MS + 10);
    expect(await settled(call.ready)).toBe(false);
    get.sent();
    expect(await settled(call.ready)).toBe(true);
  });

  it('after initialization without a GET, a call waits GRACE_MS only', async () => {
    expectStream(session);
    const call = takeTurn(session, 'POST');
    await vi.advanceTimersByTimeAsync(GRACE_MS);
    expect(await settled(call.ready)).toBe(true);
    expect(heldSessions()).toBe(0);
  });
});
