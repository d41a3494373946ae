/**
 * `default.inlineImageUrls` (docs/design/spec.md#guardrail-checks), a before-request mutator: the
 * external image URLs of a chat request bound for one of `providers` are fetched and replaced by
 * base64 data URLs, for providers that cannot fetch URLs themselves. Every fetch goes through the
 * SSRF guard (redirects included), `maxSizeBytes` (default 20 MB) is enforced while reading,
 * `timeoutMs` (default 30 s) bounds each fetch, and only image/* answers are inlined. A failed
 * fetch leaves its URL in place and passes unless `failOnError: true`.
 */
import type { CheckDeps, CheckDefinition } from '../../kernel/guardrails.ts';
import { isRecord, num, paramValidator, strings } from './params.ts';
import { timeoutRule } from './remote.ts';

export const DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024;
export const DEFAULT_IMAGE_TIMEOUT_MS = 30_000;
/** More images than this in one request are left as they are (each is a fetch). */
const MAX_IMAGES = 32;

type Part = Record<string, unknown> & { image_url: Record<string, unknown> & { url: string } };

function externalImageParts(messages: readonly unknown[]): Part[] {
  const out: Part[] = [];
  for (const m of messages) {
    if (!isRecord(m) || !Array.isArray(m.content)) continue;
    for (const part of m.content) {
      if (
        isRecord(part) &&
        part.type === 'image_url' &&
        isRecord(part.image_url) &&
        typeof part.image_url.url === 'string' &&
        /^https?:\/\//i.test(part.image_url.url)
      ) {
        out.push(part as Part);
      }
    }
  }
  return out;
}

async function toDataUrl(url: string, deps: CheckDeps, maxBytes: number, timeoutMs: number): Promise<string> {
  const res = await deps.fetch(url, { method: 'GET', timeoutMs, maxBytes, headers: { accept: 'image/*' } });
  if (res.status !== 200) throw new Error(`${url}: answered HTTP ${res.status}`);
  const type = (res.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  if (!/^image\/[a-z0-9.+-]+$/.test(type)) throw new Error(`${url}: is not an image (content-type ${type || 'missing'})`);
  const bytes = Buffer.from(await res.arrayBuffer());
  return `data:${type};base64,${bytes.toString('base64')}`;
}

function replaced(messages: readonly unknown[], urls: ReadonlyMap<string, string>): unknown[] {
  return messages.map((m) => {
    if (!isRecord(m) || !Array.isArray(m.content)) return m;
    const content = m.content.map((part: unknown) => {
      if (!isRecord(part) || !isRecord(part.image_url) || typeof part.image_url.url !== 'string') return part;
      const data = urls.get(part.image_url.url);
      return data ? { ...part, image_url: { ...part.image_url, url: data } } : part;
    });
    return { ...m, content };
  });
}

export const inlineImageUrls: CheckDefinition = {
  id: 'default.inlineImageUrls',
  transforms: true,
  events: ['beforeRequestHook'],
  validate: paramValidator({
    providers: { type: 'strings' },
    maxSizeBytes: { type: 'number', integer: true, min: 1, max: 100 * 1024 * 1024 },
    timeoutMs: timeoutRule,
  }),
  async run(ctx, p, deps) {
    const providers = strings(p.providers);
    const messages = ctx.request.json.messages;
    if (ctx.requestType !== 'chatComplete' || !Array.isArray(messages)) return { verdict: true, data: { inlined: 0 } };
    if (providers.length > 0 && !providers.includes(ctx.provider ?? '')) return { verdict: true, data: { inlined: 0, skipped: 'provider not listed' } };
    const urls = [...new Set(externalImageParts(messages).map((part) => part.image_url.url))].slice(0, MAX_IMAGES);
    if (urls.length === 0) return { verdict: true, data: { inlined: 0 } };
    const maxBytes = num(p.maxSizeBytes, DEFAULT_MAX_IMAGE_BYTES);
    const timeoutMs = num(p.timeoutMs, DEFAULT_IMAGE_TIMEOUT_MS);
    const settled = await Promise.allSettled(urls.map((u) => toDataUrl(u, deps, maxBytes, timeoutMs)));
    const done = new Map<string, string>();
    const failures: string[] = [];
    settled.forEach((s, i) => {
      if (s.status === 'fulfilled') done.set(urls[i] ?? '', s.value);
      else failures.push(s.reason instanceof Error ? s.reason.message : String(s.reason));
    });
    const data = { inlined: done.size, failed: failures.length };
    const error = failures.length > 0 ? { message: failures.join('; ') } : null;
    const verdict = !(error && p.failOnError === true);
    if (done.size === 0) return { verdict, error, data };
    return { verdict, error, data, transformed: true, transformedData: { request: { json: { ...ctx.request.json, messages: replaced(messages, done) } } } };
  },
};
