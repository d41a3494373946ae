import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { gateStream, type GateOutput, type Piece } from '../../../../layers/core/src/guardrails/window-gate.ts';

const FORBIDDEN = 'glpat-SECRET';
const tick = (n: number) => new Promise<void>((r) => (n <= 0 ? r() : setImmediate(() => tick(n - 1).then(r))));

async function* pieces(texts: string[], delays: number[] = []): AsyncGenerator<Piece<string>> {
  for (const [i, t] of texts.entries()) {
    await tick(delays[i % Math.max(1, delays.length)] ?? 0);
    yield { text: t, payload: t };
  }
}

/** Cuts `text` at the given (sorted, unique) positions. */
const cut = (text: string, at: number[]): string[] => {
  const points = [...new Set(at.map((p) => p % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const p of [...points, text.length]) {
    out.push(text.slice(from, p));
    from = p;
  }
  return out;
};

async function drain(gen: AsyncGenerator<GateOutput<string, string>>): Promise<{ released: string; denied: boolean }> {
  let released = '';
  let denied = false;
  for await (const out of gen) {
    if (out.kind === 'release') released += out.payload;
    else denied = true;
  }
  return { released, denied };
}

describe('window gate', () => {
  it('never releases a forbidden string split across random chunks, windows and check timings', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 300 }),
        fc.string({ maxLength: 300 }),
        fc.array(fc.nat(700), { maxLength: 40 }),
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: FORBIDDEN.length - 1, max: 80 }),
        fc.array(fc.nat(3), { maxLength: 8 }),
        fc.array(fc.nat(3), { maxLength: 8 }),
        async (before, after, cuts, size, context, readDelays, checkDelays) => {
          const text = before + FORBIDDEN + after;
          let calls = 0;
          const check = async (window: string) => {
            await tick(checkDelays[calls++ % Math.max(1, checkDelays.length)] ?? 0);
            return { pass: !window.includes(FORBIDDEN), detail: window };
          };
          const { released, denied } = await drain(gateStream(pieces(cut(text, cuts), readDelays), { size, context }, check));
          expect(denied).toBe(true);
          expect(released).not.toContain(FORBIDDEN);
          expect(text.startsWith(released)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('releases every piece in order when every check passes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ maxLength: 30 }), { maxLength: 30 }), fc.integer({ min: 1, max: 50 }), async (texts, size) => {
        const { released, denied } = await drain(gateStream(pieces(texts), { size, context: 5 }, async () => ({ pass: true, detail: '' })));
        expect(denied).toBe(false);
        expect(released).toBe(texts.join(''));
      }),
    );
  });

  it('holds everything, text-free pieces too, until the first window passed', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    async function* source(): AsyncGenerator<Piece<string>> {
      yield { text: '', payload: '[role]' };
      yield { text: 'short', payload: 'short' };
      await stalled;
      yield { text: ' and long enough', payload: ' and long enough' };
    }
    const windows: string[] = [];
    const gen = gateStream(source(), { size: 10, context: 3 }, async (w) => {
      windows.push(w);
      return { pass: true, detail: '' };
    });
    const first = gen.next();
    const early = await Promise.race([first.then(() => 'released'), tick(20).then(() => 'held')]);
    expect(early).toBe('held');
    release();
    expect((await first).value).toEqual({ kind: 'release', payload: '[role]' });
    expect(await drain(gen)).toEqual({ released: 'short and long enough', denied: false });
    expect(windows).toEqual(['short and long enough']);
  });

  it('keeps reading while a window is checked, and checks what came meanwhile next, with its context', async () => {
    const checks: Array<() => void> = [];
    const windows: string[] = [];
    let read = 0;
    async function* source(): AsyncGenerator<Piece<string>> {
      for (const t of ['aaaa', 'bbbb', 'cccc', 'dddd']) {
        read++;
        yield { text: t, payload: t };
      }
    }
    const gen = gateStream<string, string>(source(), { size: 4, context: 2 }, (w) => {
      windows.push(w);
      return new Promise((r) => checks.push(() => r({ pass: true, detail: '' })));
    });
    const first = gen.next();
    await tick(5);
    // The first window is being checked, and the source was read to its end meanwhile.
    expect(windows).toEqual(['aaaa']);
    expect(read).toBe(4);
    checks.shift()!();
    expect((await first).value).toEqual({ kind: 'release', payload: 'aaaa' });
    const second = gen.next();
    await tick(5);
    expect(windows).toEqual(['aaaa', 'aabbbbccccdddd']);
    checks.shift()!();
    expect((await second).value).toEqual({ kind: 'release', payload: 'bbbb' });
    expect(await drain(gen)).toEqual({ released: 'ccccdddd', denied: false });
  });

  it('denies with the index of the failing window and releases nothing of it', async () => {
    const gen = gateStream(pieces(['0123456789', 'bad!', 'more']), { size: 10, context: 0 }, async (w, i) => ({ pass: !w.includes('bad'), detail: `w${i}` }));
    const outs: GateOutput<string, string>[] = [];
    for await (const o of gen) outs.push(o);
    expect(outs).toEqual([
      { kind: 'release', payload: '0123456789' },
      { kind: 'denied', detail: 'w1', index: 1 },
    ]);
  });
});
