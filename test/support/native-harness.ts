/** Helpers for native-provider tests: a request context, a stream runner and an assembler of OpenAI chunks. */
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { nativeContext } from '../../layers/core/src/providers/native/index.ts';
import type { ProviderRequestContext, StreamOutcome, StreamTransformer } from '../../layers/core/src/providers/transform.ts';
import { UpstreamClient } from '../../layers/core/src/gateway/upstream.ts';
import { TrustedHosts } from '../../layers/core/src/security/ssrf.ts';
import type { Send, SendResponse } from '../../layers/core/src/providers/native/call.ts';

export const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);

export function ctxFor(
  body: Record<string, unknown>,
  over: Partial<Omit<ProviderRequestContext, 'request'>> & { options?: Record<string, unknown> } = {},
): ProviderRequestContext {
  const base = nativeContext({
    body,
    options: over.options ?? {},
    apiKey: 'apiKey' in over ? over.apiKey : 'test-key',
    strictOpenAICompliance: over.strictOpenAICompliance ?? true,
    clock: over.clock ?? new ManualClock(T0),
    requestId: over.requestId ?? 'req-1',
    fetchCredentials: over.fetchCredentials,
    fetch: over.fetch,
    authEndpoints: over.authEndpoints,
  });
  return { ...base, ...over, request: body };
}

/** Splits bytes into pieces of `size` so that transformers see events cut anywhere. */
export function pieces(input: string | Uint8Array | readonly (string | Uint8Array)[], size = 7): Uint8Array[] {
  const list = Array.isArray(input) ? input : [input];
  const all = Buffer.concat(list.map((x: string | Uint8Array) => (typeof x === 'string' ? Buffer.from(x) : Buffer.from(x))));
  const out: Uint8Array[] = [];
  for (let i = 0; i < all.length; i += size) out.push(all.subarray(i, i + size));
  return out;
}

export interface RunResult {
  text: string;
  /** Parsed `data:` payloads except [DONE]. */
  events: Record<string, unknown>[];
  done: boolean;
  outcome: StreamOutcome;
}

export function runStream(t: StreamTransformer, chunks: readonly Uint8Array[]): RunResult {
  let text = '';
  for (const c of chunks) text += t.push(c);
  text += t.end();
  const events: Record<string, unknown>[] = [];
  let done = false;
  for (const block of text.split('\n\n')) {
    const line = block.trim();
    if (!line) continue;
    if (!line.startsWith('data: ')) throw new Error(`not an SSE data line: ${line}`);
    const data = line.slice(6);
    if (data === '[DONE]') {
      done = true;
      continue;
    }
    events.push(JSON.parse(data) as Record<string, unknown>);
  }
  return { text, events, done, outcome: t.outcome() };
}

export interface Assembled {
  roles: string[];
  content: string;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReasons: string[];
  usage: Record<string, unknown> | undefined;
  thinking: string;
  errors: unknown[];
}

interface Delta {
  role?: string;
  content?: string;
  tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
  content_blocks?: { index: number; delta: { thinking?: string } }[];
}

/** Rebuilds the answer from chunks as a client would, keeping what the assertions need. */
export function assemble(events: readonly Record<string, unknown>[]): Assembled {
  const a: Assembled = { roles: [], content: '', toolCalls: [], finishReasons: [], usage: undefined, thinking: '', errors: [] };
  for (const e of events) {
    if (e.error) {
      a.errors.push(e.error);
      continue;
    }
    if (e.object !== 'chat.completion.chunk') throw new Error(`unexpected object ${String(e.object)}`);
    if (e.usage) a.usage = e.usage as Record<string, unknown>;
    for (const c of e.choices as { delta: Delta; finish_reason: string | null }[]) {
      const d = c.delta;
      if (d.role) a.roles.push(d.role);
      if (d.content) a.content += d.content;
      for (const b of d.content_blocks ?? []) a.thinking += b.delta.thinking ?? '';
      for (const tc of d.tool_calls ?? []) {
        const slot = (a.toolCalls[tc.index] ??= { id: '', name: '', arguments: '' });
        if (tc.id) slot.id = tc.id;
        if (tc.function?.name) slot.name = tc.function.name;
        slot.arguments += tc.function?.arguments ?? '';
      }
      if (c.finish_reason) a.finishReasons.push(c.finish_reason);
    }
  }
  return a;
}

/** Stream invariants every native provider must keep. */
export function checkStreamShape(run: RunResult, includeUsage: boolean): void {
  const chunks = run.events.filter((e) => e.object === 'chat.completion.chunk');
  const first = chunks[0] as { choices: { delta: { role?: string } }[] } | undefined;
  if (!first || first.choices[0]?.delta.role !== 'assistant') throw new Error('the first chunk does not carry the role');
  const withChoices = chunks.filter((e) => (e.choices as unknown[]).length > 0);
  const last = withChoices.at(-1) as { choices: { finish_reason: string | null }[] } | undefined;
  if (!last?.choices[0]?.finish_reason) throw new Error('the last choice chunk does not carry finish_reason');
  const usageChunks = chunks.filter((e) => e.usage);
  if (includeUsage && (usageChunks.length !== 1 || (usageChunks[0]?.choices as unknown[]).length !== 0 || chunks.at(-1) !== usageChunks[0])) {
    throw new Error('expected exactly one final usage chunk with empty choices');
  }
  if (!includeUsage && usageChunks.length) throw new Error('usage chunk sent although the client did not ask');
  if (!run.done) throw new Error('missing [DONE]');
  if (!run.outcome.usage) throw new Error('usage not reported to the caller');
}

/** The gateway's real outbound client, allowed to reach the local mocks. */
export function localUpstream(): { send: Send; close: () => void } {
  const client = new UpstreamClient(new TrustedHosts(['127.0.0.1']));
  return { send: (req) => client.send(req), close: () => client.close() };
}

export async function readText(res: SendResponse): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of res.body as AsyncIterable<Buffer>) parts.push(Buffer.from(c));
  return Buffer.concat(parts).toString('utf8');
}

/** Parses the SSE text of a transformed stream like runStream does. */
export function parseSse(text: string): Pick<RunResult, 'events' | 'done'> {
  const events: Record<string, unknown>[] = [];
  let done = false;
  for (const block of text.split('\n\n')) {
    const line = block.trim();
    if (!line) continue;
    const data = line.replace(/^data: /, '');
    if (data === '[DONE]') done = true;
    else events.push(JSON.parse(data) as Record<string, unknown>);
  }
  return { events, done };
}
