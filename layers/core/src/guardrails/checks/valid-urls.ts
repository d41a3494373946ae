/**
 * `default.validUrls`: every URL in the text answers (HEAD through the SSRF guard, a status below
 * 400), or with `onlyDNS: true` its host name resolves. A text without URLs passes. URLs to
 * private addresses count as invalid: the guard refuses them.
 */
import { lookup } from 'node:dns/promises';
import type { CheckDeps, CheckDefinition } from '../../kernel/guardrails.ts';
import { num, paramValidator } from './params.ts';
import { timeoutRule } from './remote.ts';
import { checkedText } from './text-of.ts';

const MAX_URLS = 20;
export const DEFAULT_URL_TIMEOUT_MS = 3000;

export const urlsIn = (text: string): string[] => [...new Set(text.match(/https?:\/\/[^\s<>"'`)\]}]+/gi) ?? [])].map((u) => u.replace(/[.,;:!?]+$/, ''));

async function resolves(url: string, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
    });
    await Promise.race([lookup(host), timeout]);
    return true;
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

async function answers(url: string, deps: CheckDeps, timeoutMs: number): Promise<boolean> {
  try {
    const res = await deps.fetch(url, { method: 'HEAD', timeoutMs, maxBytes: 1 << 16 });
    return res.status < 400;
  } catch {
    return false;
  }
}

export const validUrls: CheckDefinition = {
  id: 'default.validUrls',
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate: paramValidator({ onlyDNS: { type: 'boolean' }, not: { type: 'boolean' }, timeout: timeoutRule }),
  async run(ctx, p, deps) {
    const urls = urlsIn(checkedText(ctx)).slice(0, MAX_URLS);
    const timeoutMs = num(p.timeout, DEFAULT_URL_TIMEOUT_MS);
    const ok = await Promise.all(urls.map((u) => (p.onlyDNS === true ? resolves(u, timeoutMs) : answers(u, deps, timeoutMs))));
    const invalid = urls.filter((_, i) => !ok[i]);
    const valid = invalid.length === 0;
    return { verdict: p.not === true ? !valid : valid, data: { urls: urls.length, invalid } };
  },
};
