/**
 * The gate that holds a streamed answer until its text has been checked. Pieces (one per SSE
 * event, each with the text it adds) come in; the text is checked in windows of `size` characters
 * with `context` characters of the text before carried into each check; a piece leaves only once
 * every character up to its end has been checked and passed, and nothing leaves before the first
 * check passed. While one window is checked the source keeps being read, so the next window fills
 * in the meantime, and once a check ends, all the text that came since is checked next. A failed
 * check stops the stream: what was not released never is.
 *
 * Any text of at most `context + 1` characters is seen whole by the check of the window holding its
 * last character, before that character (or anything after it) is released.
 */
import type { StreamWindow } from './hooks.ts';

export interface Piece<T> {
  text: string;
  payload: T;
}

export interface WindowVerdict<V> {
  pass: boolean;
  /** What the check found (hook outcomes), passed on with the denial. */
  detail: V;
}

/** `text`: the window with its context; `index`: 0 for the first check. */
export type WindowCheck<V> = (text: string, index: number) => Promise<WindowVerdict<V>>;

export type GateOutput<T, V> = { kind: 'release'; payload: T } | { kind: 'denied'; detail: V; index: number };

interface Held<T> {
  end: number;
  payload: T;
}

type Step<T, V> = { kind: 'piece'; result: IteratorResult<Piece<T>> } | { kind: 'checked'; verdict: WindowVerdict<V> };

export async function* gateStream<T, V>(source: AsyncIterable<Piece<T>>, window: StreamWindow, check: WindowCheck<V>): AsyncGenerator<GateOutput<T, V>> {
  const it = source[Symbol.asyncIterator]();
  const held: Held<T>[] = [];
  let text = '';
  let checked = 0;
  let index = 0;
  let ended = false;
  let reading: Promise<Step<T, V>> | undefined;
  let checking: { until: number; verdict: Promise<Step<T, V>> } | undefined;
  try {
    for (;;) {
      const pending = text.length - checked;
      if (!checking && (pending >= window.size || (ended && pending > 0))) {
        const from = Math.max(0, checked - window.context);
        const at = index++;
        checking = { until: text.length, verdict: check(text.slice(from), at).then((verdict) => ({ kind: 'checked' as const, verdict })) };
      }
      if (!checking && ended) {
        // Everything was checked (or there was no text at all): the rest goes out.
        for (const h of held.splice(0)) yield { kind: 'release', payload: h.payload };
        return;
      }
      if (!ended) reading ??= it.next().then((result) => ({ kind: 'piece' as const, result }));
      const step = await Promise.race([checking?.verdict, reading].filter((p): p is Promise<Step<T, V>> => p !== undefined));
      if (step.kind === 'piece') {
        reading = undefined;
        if (step.result.done) ended = true;
        else {
          text += step.result.value.text;
          held.push({ end: text.length, payload: step.result.value.payload });
        }
        continue;
      }
      const until = checking!.until;
      checking = undefined;
      if (!step.verdict.pass) {
        yield { kind: 'denied', detail: step.verdict.detail, index: index - 1 };
        return;
      }
      checked = until;
      while (held.length > 0 && held[0]!.end <= checked) yield { kind: 'release', payload: held.shift()!.payload };
    }
  } finally {
    // Not awaited: a source stalled mid-read must not hold the denial.
    it.return?.().catch(() => undefined);
  }
}
