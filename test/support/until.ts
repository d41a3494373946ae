/**
 * Waiting in tests without betting on the machine's speed. Work that happens off the request path
 * (a record completed, a log stored, a cache entry written, a socket registered) is waited for by
 * polling its condition, never by sleeping a fixed time; and a test that does a lot of work gets a
 * time limit from the amount of work. The limits only bound a hang: on a busy machine (CI from a
 * fresh clone, several suites sharing two cores) the same work takes many times longer than on an
 * idle one, and the tests must still pass.
 */

/** How long a condition may take to hold: far beyond what any of them takes, below vitest's 30 s test limit. */
export const PATIENCE_MS = 20_000;

/** Polls `probe` until it returns something other than undefined; throws naming `what` after `timeoutMs`. */
export async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = PATIENCE_MS, intervalMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Runs `check` (expectations) until it passes; after `timeoutMs` its last failure is thrown. */
export async function eventually(check: () => unknown, timeoutMs = PATIENCE_MS, intervalMs = 10): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/**
 * A test's time limit from the HTTP round trips it makes: 150 ms each (an idle machine needs a few;
 * a 2-core machine at load 12 ran the authorization matrix's 1,870 calls past 30 s), and never
 * under vitest's default 30 s.
 */
export const timeoutFor = (calls: number): number => Math.max(30_000, calls * 150);
