/**
 * After-request hooks on a streamed answer, while it streams: its events go through the window
 * gate (guardrails/window-gate.ts), so no event leaves before the text up to its end passed every
 * denying hook. The attempt is answered only once the first window passed, so a denial there is a
 * real 446 (and a fallback may still take over); a denial later ends the stream with the
 * protocol's own terminal events (stream-text.ts) and is recorded for the log.
 */
import { Readable } from 'node:stream';
import type { HookOutcome } from '../kernel/guardrails.ts';
import type { HookSpec, StreamWindow } from '../guardrails/hooks.ts';
import { runHooks, type HooksRun } from '../guardrails/runner.ts';
import { gateStream, type GateOutput } from '../guardrails/window-gate.ts';
import { contextOf, deniedAttempt, noteRun, shownResults, withoutLength, type Guarded } from './guard-shared.ts';
import type { HookResults } from '../kernel/lifecycle.ts';
import type { Attempt } from './routing/execute.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';
import { ssePieces, StreamText } from './stream-text.ts';

export interface GuardedStream {
  attempt: Attempt;
  target: ResolvedTarget;
  hooks: HookSpec[];
  results: HookResults;
  /** A before-request hook failed without denying. */
  flagged: boolean;
}

/** One gate for all the hooks: the smallest window, the largest context. */
function windowOf(hooks: readonly HookSpec[]): StreamWindow {
  return { size: Math.min(...hooks.map((h) => h.window.size)), context: Math.max(...hooks.map((h) => h.window.context)) };
}

export async function guardStream(g: Guarded, s: GuardedStream): Promise<Attempt> {
  const { attempt, target, hooks, results } = s;
  const body = attempt.body!;
  const text = new StreamText();
  const base = contextOf(g, target, 'afterRequestHook');
  /** The first run that failed (denied or flagged), else the last: what the answer and the log show. */
  let shown: { run: HooksRun; index: number } | undefined;
  let flaggedWindow = false;
  const gate = gateStream(ssePieces(body, text), windowOf(hooks), async (window, index) => {
    // What was sent stays sent: rewrites of a streamed answer cannot apply, and are not claimed.
    const run = await runHooks(hooks, { ...base, response: { json: null, text: window, statusCode: attempt.status } }, g.runner, { applies: false });
    if (run.failed && !run.denied && index === 0) flaggedWindow = true;
    // Keep the first failure (a denial over a mere flag), else the latest run.
    if (!shown || !shown.run.failed || (run.denied && !shown.run.denied)) shown = { run, index };
    return { pass: !run.denied, detail: run };
  });
  let noted = false;
  const note = (): void => {
    if (noted) return;
    noted = true;
    if (shown) results.after_request_hooks = noteRun(g.f, 'after_request_hooks', shown.run, { window_index: shown.index });
  };
  const first = await gate.next();
  if (!first.done && first.value.kind === 'denied') {
    body.destroy();
    note();
    return deniedAttempt(results);
  }
  const out = Readable.from(released(g, { first, gate, text, results, note, body }), { objectMode: false });
  return { ...attempt, status: s.flagged || flaggedWindow ? 246 : attempt.status, headers: withoutLength(attempt.headers), body: out };
}

interface Release {
  first: IteratorResult<GateOutput<string, HooksRun>>;
  gate: AsyncGenerator<GateOutput<string, HooksRun>>;
  text: StreamText;
  results: HookResults;
  note: () => void;
  body: Readable;
}

async function* released(g: Guarded, r: Release): AsyncGenerator<Buffer> {
  try {
    for (let next = r.first; !next.done; next = await r.gate.next()) {
      const o = next.value;
      if (o.kind === 'release') {
        yield Buffer.from(o.payload);
        continue;
      }
      r.note();
      const denied = r.results.after_request_hooks.filter((h: HookOutcome) => !h.verdict && h.deny).map((h) => h.id);
      g.f.record.errorCode = 'hooks_failed';
      g.f.record.errorMessage = `The answer was stopped mid-stream by a guardrail hook: ${denied.join(', ')}`;
      r.body.destroy();
      yield Buffer.from(r.text.terminal({ ...shownResults(r.results) }));
      return;
    }
    r.note();
  } finally {
    r.note();
    // The client left, or the stream ended: release the provider's connection either way.
    r.body.destroy();
    r.gate.return(undefined).catch(() => undefined);
  }
}
