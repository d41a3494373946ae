/**
 * What the checks that call a service share: a JSON POST through the guarded fetch, the error
 * result (a check that errors passes unless `failOnError: true`), and the URL parameter rule.
 */
import type { CheckDeps, CheckResult } from '../../kernel/guardrails.ts';
import type { ParamRule } from './params.ts';

/** A service answered something a check cannot use (its status, never its body: it may echo secrets). */
export class RemoteCheckError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RemoteCheckError';
  }
}

/** The result of a check that could not decide: passes unless `failOnError: true`. */
export function errored(p: Readonly<Record<string, unknown>>, err: unknown, data?: unknown): CheckResult {
  const message = err instanceof Error ? err.message : String(err);
  return { verdict: p.failOnError !== true, error: { message }, data: data ?? null };
}

/** Answers 2xx with a JSON body, or throws a RemoteCheckError naming the service and the status. */
export async function postJson(
  deps: CheckDeps,
  service: string,
  url: string,
  body: unknown,
  opts: { headers?: Record<string, string>; timeoutMs: number; sign?: (body: string) => Promise<Record<string, string>> },
): Promise<unknown> {
  const text = JSON.stringify(body);
  const headers = { 'content-type': 'application/json', ...opts.headers, ...(opts.sign ? await opts.sign(text) : {}) };
  const res = await deps.fetch(url, { method: 'POST', headers, body: text, timeoutMs: opts.timeoutMs, maxBytes: 1 << 20 });
  if (res.status < 200 || res.status > 299) {
    await res.body?.cancel();
    throw new RemoteCheckError(`${service} answered HTTP ${res.status}`);
  }
  try {
    return (await res.json()) as unknown;
  } catch {
    throw new RemoteCheckError(`${service} answered a body that is not JSON`);
  }
}

/** An http(s) URL (where it may point is checked when it is called, by the SSRF guard). */
export const httpUrl: Extract<ParamRule, { type: 'string' }> = {
  type: 'string',
  nonEmpty: true,
  maxLength: 2048,
  check: (v) => (/^https?:\/\/[^\s/]+/i.test(v) ? null : 'must be an http or https URL'),
};

export const timeoutRule: ParamRule = { type: 'number', integer: true, min: 1, max: 120_000 };
