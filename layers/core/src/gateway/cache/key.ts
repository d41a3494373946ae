/** Exact-match cache keys: one hash over everything that decides the answer. */
import { hash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth, so that two requests differing only in key order
 * hash alike. Array order is kept (it is meaningful); `undefined` members are dropped as JSON does.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const record = value as Record<string, unknown>;
  const members: string[] = [];
  for (const k of Object.keys(record).sort()) {
    if (record[k] !== undefined) members.push(`${JSON.stringify(k)}:${canonicalJson(record[k])}`);
  }
  return `{${members.join(',')}}`;
}

export const sha256Hex = (text: string): string => hash('sha256', text, 'hex');

export interface CacheKeyInput {
  workspaceId: string;
  /** The `x-gw-cache-namespace` header; absent or empty means the workspace's default namespace. */
  namespace?: string | undefined;
  /** The gateway endpoint, e.g. `chat/completions`. */
  endpoint: string;
  /** The provider the request goes to, when the lookup happens per target. */
  provider?: string | undefined;
  /** The normalized provider request body, every field kept. */
  body: unknown;
}

/** Hex SHA-256 of the canonical request; workspace and namespace are hashed in, so they partition. */
export function cacheKey(input: CacheKeyInput): string {
  return sha256Hex(
    canonicalJson({
      v: 1,
      workspace: input.workspaceId,
      namespace: input.namespace || null,
      endpoint: input.endpoint,
      provider: input.provider ?? null,
      body: input.body,
    }),
  );
}
