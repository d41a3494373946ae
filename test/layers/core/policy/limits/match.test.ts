/** Which requests a policy counts and in which group; what a request is estimated to consume. */
import { describe, expect, it } from 'vitest';
import { parseAttached } from '../../../../../layers/core/src/kernel/limits.ts';
import { DEFAULT_COMPLETION_TOKENS, DEFAULT_COST_ESTIMATOR, estimateTokens } from '../../../../../layers/core/src/policy/limits/estimate.ts';
import {
  entityIdOf,
  groupValueKey,
  isConditionKey,
  isGroupByKey,
  matchesConditions,
  type LimitContext,
} from '../../../../../layers/core/src/policy/limits/match.ts';

const ctx: LimitContext = {
  organisationId: 'org',
  workspaceId: 'ws',
  apiKeyId: 'key-1',
  endpoint: 'chatComplete',
  metadata: { _user: 'alice', tier: 2, flag: true, nested: { a: 1 } },
};

describe('conditions', () => {
  it.each([
    [[{ key: 'workspace_id', value: 'ws' }], true],
    [[{ key: 'workspace_id', value: 'other' }], false],
    [
      [
        { key: 'api_key', value: 'key-1' },
        { key: 'endpoint_type', value: 'chatComplete' },
      ],
      true,
    ],
    [
      [
        { key: 'api_key', value: 'key-1' },
        { key: 'endpoint_type', value: 'embed' },
      ],
      false,
    ],
    // Same key: alternatives.
    [
      [
        { key: 'endpoint_type', value: 'embed' },
        { key: 'endpoint_type', value: 'chatComplete' },
      ],
      true,
    ],
    [[{ key: 'metadata._user', value: 'alice' }], true],
    [[{ key: 'metadata.tier', value: '2' }], true],
    [[{ key: 'metadata.flag', value: 'true' }], true],
    [[{ key: 'metadata._user', value: '*' }], true],
    [[{ key: 'metadata.missing', value: '*' }], false],
    [[{ key: 'metadata.nested', value: '*' }], false],
    [[{ key: 'organisation_id', value: 'org' }], true],
  ])('%j matches: %s', (conditions, expected) => {
    expect(matchesConditions(conditions, ctx)).toBe(expected);
  });

  it('knows its keys', () => {
    for (const k of ['workspace_id', 'organisation_id', 'api_key', 'endpoint_type', 'metadata._user', 'metadata.a.b-c']) expect(isConditionKey(k)).toBe(true);
    for (const k of ['model', 'metadata.', 'metadata.a b', `metadata.${'x'.repeat(65)}`]) expect(isConditionKey(k)).toBe(false);
    expect(isGroupByKey('endpoint_type')).toBe(false);
    expect(isGroupByKey('metadata._user')).toBe(true);
  });
});

describe('groups', () => {
  it('names the group by its keys and values; a missing value is the empty group', () => {
    expect(groupValueKey([{ key: 'api_key' }], ctx)).toBe('api_key:key-1');
    expect(groupValueKey([{ key: 'metadata._user' }, { key: 'workspace_id' }], ctx)).toBe('metadata._user:alice,workspace_id:ws');
    expect(groupValueKey([{ key: 'metadata.team' }], ctx)).toBe('metadata.team:');
  });

  it('gives each group a short stable id', () => {
    expect(entityIdOf('api_key:key-1')).toBe(entityIdOf('api_key:key-1'));
    expect(entityIdOf('api_key:key-1')).not.toBe(entityIdOf('api_key:key-2'));
    expect(entityIdOf('x'.repeat(5000))).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});

describe('estimates', () => {
  it('counts a token per four characters of text, plus the maximum completion', () => {
    const body = {
      messages: [
        { role: 'system', content: 'abcd' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'efghijkl' },
            { type: 'image_url', image_url: { url: 'data:...' } },
          ],
        },
      ],
      max_tokens: 10,
    };
    expect(estimateTokens('chatComplete', body)).toEqual({ prompt: 3, completion: 10, total: 13 });
    expect(estimateTokens('chatComplete', { ...body, max_completion_tokens: 4, n: 3 }).completion).toBe(12);
    expect(estimateTokens('chatComplete', { messages: [] }).completion).toBe(DEFAULT_COMPLETION_TOKENS);
    expect(estimateTokens('complete', { prompt: 'x'.repeat(9), max_tokens: 1 })).toEqual({ prompt: 3, completion: 1, total: 4 });
    expect(estimateTokens('embed', { input: ['abcd', 'efgh'] })).toEqual({ prompt: 2, completion: 0, total: 2 });
    expect(estimateTokens('chatComplete', undefined).prompt).toBe(0);
  });

  it('prices tokens conservatively by default, in whole micro-dollars', () => {
    expect(DEFAULT_COST_ESTIMATOR.micros({ promptTokens: 9, completionTokens: 3 })).toBe(180);
  });
});

describe('attached limits', () => {
  it('normalizes a key or workspace limit and skips what is malformed', () => {
    expect(
      parseAttached({ credit_limit: 5 }, [
        { type: 'requests', unit: 'rps', value: 2 },
        { type: 'x', unit: 'rpm', value: 1 },
        { type: 'tokens', unit: 'rpm', value: 0 },
      ]),
    ).toEqual({
      usage: [{ type: 'cost', credit_limit: 5, alert_threshold: null, periodic_reset: null, periodic_reset_days: null }],
      rate: [{ type: 'requests', unit: 'rps', value: 2 }],
    });
    expect(parseAttached([{ type: 'tokens', credit_limit: 100, alert_threshold: 80, periodic_reset_days: 7 }, { credit_limit: -1 }], null).usage).toEqual([
      { type: 'tokens', credit_limit: 100, alert_threshold: 80, periodic_reset: null, periodic_reset_days: 7 },
    ]);
    expect(parseAttached(null, undefined)).toEqual({ usage: [], rate: [] });
    expect(parseAttached({ credit_limit: null }, 'nope')).toEqual({ usage: [], rate: [] });
  });
});
