/** Generating, hashing and masking API keys. The key itself is only ever shown at creation. */
import { hash, randomBytes } from 'node:crypto';

const PREFIX = 'gw_';

export function generateApiKey(): string {
  return PREFIX + randomBytes(30).toString('base64url');
}

/** Once per authenticated request: the one-shot `hash` costs less than a `createHash` object. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

export function maskApiKey(key: string): string {
  return key.length <= 12 ? '****' : `${key.slice(0, 7)}****${key.slice(-4)}`;
}
