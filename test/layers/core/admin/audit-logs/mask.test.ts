/** What the audit log keeps of a request body. */
import { describe, expect, it } from 'vitest';
import { auditBody, maskSecrets, MAX_AUDIT_BODY } from '../../../../../layers/core/src/admin/audit-logs/mask.ts';

describe('maskSecrets', () => {
  it('masks values under secret-sounding keys at any depth and secret-looking strings anywhere; names such as a virtual key slug stay', () => {
    const masked = maskSecrets({
      name: 'x',
      api_key: 'anything',
      targets: [{ provider: 'openai', key: 'k', aws_secret_access_key: 's', virtual_key: 'vk-slug' }],
      note: 'use gw_abcdefghijklmnopqrstuvwxyz0123 or sk-abcdefghijkl',
      token: 'gwi_abcdefghijklmnopqrstuv',
      key_transition_period_ms: 1_800_000,
      scopes: ['api_keys.create'],
      is_secret: false,
    });
    expect(masked).toEqual({
      name: 'x',
      api_key: '****',
      targets: [{ provider: 'openai', key: '****', aws_secret_access_key: '****', virtual_key: 'vk-slug' }],
      note: 'use **** or ****',
      token: '****',
      key_transition_period_ms: 1_800_000,
      scopes: ['api_keys.create'],
      is_secret: false,
    });
  });
});

describe('auditBody', () => {
  it('keeps JSON as compact masked JSON, other text masked, nothing for an empty body, and caps the size', () => {
    expect(auditBody('')).toBeNull();
    expect(auditBody('{ "password": "p", "a": 1 }')).toBe('{"password":"****","a":1}');
    expect(auditBody('not json gw_abcdefghijklmnopqrstuvwx')).toBe('not json ****');
    const long = auditBody(JSON.stringify({ text: 'a'.repeat(MAX_AUDIT_BODY * 2) }));
    expect(long?.length).toBe(MAX_AUDIT_BODY + 1);
  });
});
