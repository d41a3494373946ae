/** The secret picked from what a manager holds, and Vault's KV v2 paths. */
import { describe, expect, it } from 'vitest';
import { kindOfStatus, pickField, SecretManagerError } from '../../../../layers/core/src/ports/secret-managers.ts';
import { kvDataPath } from '../../../../layers/core/src/secrets/vault.ts';

describe('pickField', () => {
  it('takes secret_key from a JSON secret, the only field without it, or the whole text', () => {
    expect(pickField('{"api_key":"a","other":"b"}', 'api_key')).toBe('a');
    expect(pickField('{"api_key":"a"}', undefined)).toBe('a');
    expect(pickField('plain-text-key', null)).toBe('plain-text-key');
  });

  it('refuses a missing field or an ambiguous secret, without echoing the secret', () => {
    for (const [value, key] of [
      ['{"a":"secret-1"}', 'b'],
      ['{"a":"secret-1","b":"secret-2"}', undefined],
      ['not json', 'a'],
    ] as const) {
      let error: unknown;
      try {
        pickField(value, key);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(SecretManagerError);
      expect((error as SecretManagerError).kind).toBe('rejected');
      expect((error as Error).message).not.toContain('secret-1');
    }
  });
});

describe('kvDataPath', () => {
  it('puts data/ after the mount unless it is there', () => {
    expect(kvDataPath('secret/gantry/openai')).toBe('secret/data/gantry/openai');
    expect(kvDataPath('/kv/data/app/')).toBe('kv/data/app');
    expect(() => kvDataPath('secret')).toThrow(SecretManagerError);
  });
});

describe('kindOfStatus', () => {
  it('lets only throttling and unavailability be bridged with a cached value', () => {
    expect([401, 403, 404, 400, 429, 500, 503].map(kindOfStatus)).toEqual([
      'denied',
      'denied',
      'not_found',
      'rejected',
      'throttled',
      'unavailable',
      'unavailable',
    ]);
  });
});
