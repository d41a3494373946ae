/** The one redaction list: secret field names and secret formats, the same for logs, audit and exports. */
import { describe, expect, it } from 'vitest';
import { maskSecrets } from '../../../../layers/core/src/admin/audit-logs/mask.ts';
import { REDACTED, redact, redactAttributes, redactQuery, redactText } from '../../../../layers/core/src/security/redact.ts';

const SECRET_NAMES = [
  'api_key',
  'apiKey',
  'x-api-key',
  'x-gw-api-key',
  'password',
  'passwd',
  'token',
  'secret',
  'access_token',
  'refresh_token',
  'id_token',
  'client_secret',
  'authorization',
  'Proxy-Authorization',
  'aws_secret_access_key',
  'aws_session_token',
  'azure_ad_token',
  'private_key',
  'credentials',
  'cookie',
  'vertex_service_account_json',
  'webhook_secret',
  'x-amz-security-token',
];

const SECRET_VALUES = [
  'gw_' + 'A'.repeat(40),
  'gwi_' + 'b'.repeat(43),
  'sk-proj-' + 'c'.repeat(24),
  'sk-ant-api03-' + 'd'.repeat(30),
  'AKIAIOSFODNN7EXAMPLE',
  'AIza' + 'e'.repeat(35),
  'hf_' + 'f'.repeat(30),
  'gsk_' + 'g'.repeat(30),
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl',
];

describe('redact', () => {
  it.each(SECRET_NAMES)('redacts the value of a field named %s, at any depth', (name) => {
    expect(redact({ a: [{ [name]: 'plain-value' }], keep: 'me' })).toEqual({ a: [{ [name]: REDACTED }], keep: 'me' });
  });

  it.each(SECRET_VALUES)('redacts %s wherever it appears in a string', (secret) => {
    const out = JSON.stringify(redact({ note: `use ${secret} please`, list: [secret] }));
    expect(out).not.toContain(secret);
    expect(out).toContain('use [REDACTED] please');
  });

  it('keeps bearer schemes readable but not their credential', () => {
    expect(redactText('Authorization: Bearer abc.def-123')).toBe('Authorization: Bearer [REDACTED]');
  });

  it("a policy's conditions and group_by read as written; a key-shaped value in them is still redacted", () => {
    const policy = {
      conditions: [
        { key: 'api_key', value: 'gw_' + 'Z'.repeat(40) },
        { key: 'metadata.team', value: 'a' },
      ],
      group_by: [{ key: 'api_key' }],
      metadata_filters: [{ key: 'env', value: 'prod' }],
    };
    expect(redact(policy)).toEqual({
      conditions: [
        { key: 'api_key', value: REDACTED },
        { key: 'metadata.team', value: 'a' },
      ],
      group_by: [{ key: 'api_key' }],
      metadata_filters: [{ key: 'env', value: 'prod' }],
    });
    expect(maskSecrets(policy)).toMatchObject({ group_by: [{ key: 'api_key' }], conditions: [{ key: 'api_key' }, { key: 'metadata.team' }] });
  });

  it('leaves counters and names alone: max_tokens, virtual_key, is_secret, key_transition_period_ms', () => {
    const body = { max_tokens: 10, virtual_key: 'vk-main', is_secret: false, key_transition_period_ms: 60_000, prompt_tokens: 3 };
    expect(redact(body)).toBe(body);
  });

  it('redacts query parameters by name and by format', () => {
    const q = new URLSearchParams({ token: 'abc', api_key: 'x', page: '2', note: 'sk-ant-' + 'q'.repeat(20) });
    expect(redactQuery(q, '****')).toEqual({ token: '****', api_key: '****', page: '2', note: '****' });
  });

  it('redacts a key pasted as a field or parameter name', () => {
    const key = SECRET_VALUES[0]!;
    expect(redact({ [key]: 'x', nested: { [`for ${key}`]: 1 }, keep: 2 })).toEqual({ [REDACTED]: 'x', nested: { [`for ${REDACTED}`]: 1 }, keep: 2 });
    expect(redactQuery(new URLSearchParams([[key, '1']]), '****')).toEqual({ '****': '1' });
  });
});

describe('redactAttributes', () => {
  it('redacts secret formats in every string attribute but those the service sets itself', () => {
    const key = SECRET_VALUES[2]!;
    const record = { id: `id-${key}`, workspace_id: key, uri: `/v1/api-keys/${key}`, agent: `Bearer abcdefgh`, count: 3, none: null };
    expect(redactAttributes(record, new Set(['id']), '****')).toEqual({
      id: `id-${key}`,
      workspace_id: '****',
      uri: '/v1/api-keys/****',
      agent: 'Bearer ****',
      count: 3,
      none: null,
    });
  });

  it('answers the record itself when nothing is secret', () => {
    const record = { id: 'a', workspace_id: 'default', uri: '/v1/configs' };
    expect(redactAttributes(record, new Set())).toBe(record);
  });
});
