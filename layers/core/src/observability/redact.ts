/**
 * Keeps secrets out of request logs: values under secret-looking keys (provider keys, AWS secret
 * keys, passwords, tokens) and bearer credentials become `[REDACTED]`, at any depth. Headers never
 * reach a log at all; this covers bodies and metadata, where a client may still put a key.
 */

export const REDACTED = '[REDACTED]';

const SECRET_KEY =
  /^(x-gw-api-key|authorization|proxy-authorization|api[-_]?key|x-api-key|api[-_]?token|access[-_]?token|refresh[-_]?token|id[-_]?token|auth[-_]?token|client[-_]?secret|secret|secret[-_]?key|password|passwd|private[-_]?key|aws[-_]?secret[-_]?access[-_]?key|aws[-_]?session[-_]?token|awssecretaccesskey|awssessiontoken|azure[-_]?ad[-_]?token|vertex[-_]?service[-_]?account[-_]?json)$/i;

const BEARER = /^\s*(bearer|basic)\s+\S+/i;

export const isSecretKey = (key: string): boolean => SECRET_KEY.test(key);

/** `value` with every secret replaced: a copy where something changed, the value itself otherwise. */
export function redact(value: unknown, maxDepth = 32): unknown {
  if (typeof value === 'string') return BEARER.test(value) ? REDACTED : value;
  if (value === null || typeof value !== 'object') return value;
  if (maxDepth <= 0) return REDACTED;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((v, i) => {
      const r = redact(v, maxDepth - 1);
      if (r !== v) (out ??= [...value])[i] = r;
    });
    return out ?? value;
  }
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const r = isSecretKey(k) && v !== null && v !== undefined && v !== '' ? REDACTED : redact(v, maxDepth - 1);
    if (r !== v) (out ??= { ...(value as Record<string, unknown>) })[k] = r;
  }
  return out ?? value;
}
