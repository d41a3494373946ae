import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { compileQuery, matches, pickConditional } from '../../../../../layers/core/src/gateway/routing/conditions.ts';
import { isRecord } from '../../../../../layers/core/src/http/json.ts';
import type { ConditionContext, ConfigNode, Strategy } from '../../../../../layers/core/src/kernel/routing.ts';

const ctx: ConditionContext = {
  metadata: {
    tier: 'gold',
    region: 'eu',
    score: 7,
    user: { id: 'u1', plan: { name: 'pro', seats: 5 }, tags: ['beta', 'staff'] },
    'app.version': '1.2.3',
    nothing: null,
  },
  params: {
    model: 'gpt-4o-mini',
    max_tokens: 500,
    stream: true,
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    ],
    response_format: { type: 'json_object' },
  },
  url: { pathname: '/v1/chat/completions' },
};

const m = (query: Record<string, unknown>, c: ConditionContext = ctx): boolean => matches(query, c);

describe('paths', () => {
  it('resolves keys at any depth', () => {
    expect(m({ 'metadata.user.plan.name': 'pro' })).toBe(true);
    expect(m({ 'metadata.user.plan.seats': 5 })).toBe(true);
    expect(m({ 'params.response_format.type': 'json_object' })).toBe(true);
    expect(m({ 'url.pathname': '/v1/chat/completions' })).toBe(true);
  });

  it('indexes arrays with numeric segments', () => {
    expect(m({ 'params.messages.0.role': 'system' })).toBe(true);
    expect(m({ 'params.messages.1.content.0.text': 'hi' })).toBe(true);
    expect(m({ 'metadata.user.tags.1': 'staff' })).toBe(true);
    expect(m({ 'params.messages.2.role': { $ne: null } })).toBe(false);
    expect(m({ 'params.messages.role': { $ne: null } })).toBe(false);
    expect(m({ 'params.messages.01.role': 'user' })).toBe(false);
  });

  it('finds keys that contain dots', () => {
    expect(m({ 'metadata.app.version': '1.2.3' })).toBe(true);
    expect(m({ 'metadata.app.version': { $regex: '^1\\.' } })).toBe(true);
  });

  it('reads own properties only', () => {
    expect(m({ 'metadata.constructor': { $ne: null } })).toBe(false);
    expect(m({ 'metadata.__proto__': { $ne: null } })).toBe(false);
    expect(m({ 'params.model.length': 11 })).toBe(false);
  });
});

describe('equality', () => {
  it('treats a bare value as $eq', () => {
    expect(m({ 'metadata.tier': 'gold' })).toBe(true);
    expect(m({ 'metadata.tier': 'silver' })).toBe(false);
    expect(m({ 'metadata.tier': { $eq: 'gold' } })).toBe(true);
  });

  it('deep-equals objects and arrays, ignoring key order', () => {
    expect(m({ 'metadata.user.plan': { seats: 5, name: 'pro' } })).toBe(true);
    expect(m({ 'metadata.user.plan': { name: 'pro' } })).toBe(false);
    expect(m({ 'metadata.user.tags': ['beta', 'staff'] })).toBe(true);
    expect(m({ 'metadata.user.tags': ['staff', 'beta'] })).toBe(false);
    expect(m({ 'metadata.user.tags': { $eq: ['beta', 'staff'] } })).toBe(true);
    expect(m({ 'metadata.user.tags': 'beta' })).toBe(false);
    expect(m({ 'params.response_format': { $eq: { type: 'json_object' } } })).toBe(true);
    expect(m({ 'params.response_format': [] })).toBe(false);
  });

  it('does not coerce types', () => {
    expect(m({ 'params.max_tokens': '500' })).toBe(false);
    expect(m({ 'params.stream': 'true' })).toBe(false);
    expect(m({ 'metadata.score': { $eq: '7' } })).toBe(false);
  });

  it('$ne is the negation of $eq', () => {
    expect(m({ 'metadata.tier': { $ne: 'silver' } })).toBe(true);
    expect(m({ 'metadata.tier': { $ne: 'gold' } })).toBe(false);
  });
});

describe('missing fields (MongoDB semantics)', () => {
  it('match $ne and $nin, and null', () => {
    expect(m({ 'metadata.absent': { $ne: 'x' } })).toBe(true);
    expect(m({ 'metadata.absent': { $nin: ['x', 'y'] } })).toBe(true);
    expect(m({ 'metadata.absent': null })).toBe(true);
    expect(m({ 'metadata.nothing': null })).toBe(true);
    expect(m({ 'metadata.absent': { $in: [null] } })).toBe(true);
    expect(m({ 'metadata.absent': { $ne: null } })).toBe(false);
  });

  it('match nothing else', () => {
    for (const op of ['$eq', '$gt', '$gte', '$lt', '$lte']) expect(m({ 'metadata.absent': { [op]: 1 } })).toBe(false);
    expect(m({ 'metadata.absent': { $in: ['x'] } })).toBe(false);
    expect(m({ 'metadata.absent': { $regex: '.*' } })).toBe(false);
    expect(m({ 'metadata.tier.deeper': 'x' })).toBe(false);
  });
});

describe('ordering operators', () => {
  it('compare numbers', () => {
    expect(m({ 'params.max_tokens': { $gt: 499 } })).toBe(true);
    expect(m({ 'params.max_tokens': { $gt: 500 } })).toBe(false);
    expect(m({ 'params.max_tokens': { $gte: 500 } })).toBe(true);
    expect(m({ 'params.max_tokens': { $lt: 500 } })).toBe(false);
    expect(m({ 'params.max_tokens': { $lte: 500 } })).toBe(true);
    expect(m({ 'params.max_tokens': { $lt: 500.5 } })).toBe(true);
  });

  it('compare strings', () => {
    expect(m({ 'metadata.region': { $gt: 'ap' } })).toBe(true);
    expect(m({ 'metadata.region': { $lte: 'eu' } })).toBe(true);
    expect(m({ 'metadata.region': { $lt: 'eu' } })).toBe(false);
  });

  it('are false across types, never throwing', () => {
    expect(m({ 'params.max_tokens': { $gt: '100' } })).toBe(false);
    expect(m({ 'metadata.tier': { $lt: 5 } })).toBe(false);
    expect(m({ 'params.stream': { $gte: 0 } })).toBe(false);
    expect(m({ 'params.messages': { $gt: 0 } })).toBe(false);
    expect(m({ 'metadata.nothing': { $lte: 0 } })).toBe(false);
    expect(m({ 'params.max_tokens': { $gt: null } })).toBe(false);
  });

  it('AND several operators on one field', () => {
    expect(m({ 'params.max_tokens': { $gt: 100, $lte: 1000 } })).toBe(true);
    expect(m({ 'params.max_tokens': { $gt: 100, $lte: 400 } })).toBe(false);
    expect(m({ 'params.max_tokens': { $gte: 500, $lte: 500, $ne: 7 } })).toBe(true);
  });
});

describe('$in and $nin', () => {
  it('test membership by deep equality', () => {
    expect(m({ 'metadata.tier': { $in: ['gold', 'platinum'] } })).toBe(true);
    expect(m({ 'metadata.tier': { $in: ['silver'] } })).toBe(false);
    expect(m({ 'metadata.tier': { $nin: ['silver'] } })).toBe(true);
    expect(m({ 'metadata.tier': { $nin: ['gold'] } })).toBe(false);
    expect(m({ 'metadata.user.plan': { $in: [{ name: 'pro', seats: 5 }] } })).toBe(true);
    expect(m({ 'params.max_tokens': { $in: ['500'] } })).toBe(false);
    expect(m({ 'metadata.tier': { $in: [] } })).toBe(false);
    expect(m({ 'metadata.tier': { $nin: [] } })).toBe(true);
  });

  it('fail closed on an operand that is not an array', () => {
    expect(m({ 'metadata.tier': { $in: 'gold' } })).toBe(false);
    expect(m({ 'metadata.tier': { $nin: 'silver' } })).toBe(false);
  });
});

describe('$regex', () => {
  it('tests strings', () => {
    expect(m({ 'params.model': { $regex: '^gpt-4o' } })).toBe(true);
    expect(m({ 'params.model': { $regex: 'claude' } })).toBe(false);
    expect(m({ 'url.pathname': { $regex: '/chat/' } })).toBe(true);
  });

  it('is false on anything but a string', () => {
    expect(m({ 'params.max_tokens': { $regex: '5' } })).toBe(false);
    expect(m({ 'params.messages': { $regex: '.' } })).toBe(false);
  });

  it('fails closed on a bad or oversized pattern', () => {
    expect(m({ 'params.model': { $regex: '(' } })).toBe(false);
    expect(m({ 'params.model': { $regex: `${'.?'.repeat(300)}` } })).toBe(false);
  });

  it('honours sibling operators and keys (unlike the peer)', () => {
    expect(m({ 'params.model': { $regex: '^gpt', $ne: 'gpt-4o-mini' } })).toBe(false);
    expect(m({ 'params.model': { $regex: '^gpt' }, 'metadata.tier': 'silver' })).toBe(false);
    expect(m({ 'metadata.tier': 'silver', 'params.model': { $regex: '^gpt' } })).toBe(false);
  });

  describe('compilation', () => {
    const Original = globalThis.RegExp;
    let built = 0;
    afterEach(() => {
      globalThis.RegExp = Original;
    });

    it('compiles each pattern once per query', () => {
      globalThis.RegExp = class Counting extends Original {
        constructor(pattern: string | RegExp, flags?: string) {
          super(pattern, flags);
          built++;
        }
      } as RegExpConstructor;
      const query = { 'params.model': { $regex: '^gpt' }, $or: [{ 'url.pathname': { $regex: 'chat' } }] };
      const compiled = compileQuery(query);
      for (let i = 0; i < 50; i++) expect(compiled(ctx)).toBe(true);
      expect(built).toBe(2);

      built = 0;
      for (let i = 0; i < 50; i++) expect(matches(query, ctx)).toBe(true);
      expect(built).toBe(2);
    });
  });
});

describe('several keys, $and and $or', () => {
  it('ANDs the keys of one query', () => {
    expect(m({ 'metadata.tier': 'gold', 'params.stream': true })).toBe(true);
    expect(m({ 'metadata.tier': 'gold', 'params.stream': false })).toBe(false);
  });

  it('combines sub-queries', () => {
    expect(m({ $and: [{ 'metadata.tier': 'gold' }, { 'params.max_tokens': { $gt: 100 } }] })).toBe(true);
    expect(m({ $and: [{ 'metadata.tier': 'gold' }, { 'params.max_tokens': { $gt: 1000 } }] })).toBe(false);
    expect(m({ $or: [{ 'metadata.tier': 'silver' }, { 'params.max_tokens': { $gt: 100 } }] })).toBe(true);
    expect(m({ $or: [{ 'metadata.tier': 'silver' }, { 'params.max_tokens': { $gt: 1000 } }] })).toBe(false);
    expect(m({ $or: [{ $and: [{ 'metadata.tier': 'gold' }, { 'metadata.region': 'eu' }] }, { 'metadata.tier': 'x' }] })).toBe(true);
  });

  it('honours keys beside $and / $or (unlike the peer)', () => {
    expect(m({ $or: [{ 'metadata.tier': 'gold' }], 'metadata.region': 'us' })).toBe(false);
    expect(m({ 'metadata.region': 'us', $or: [{ 'metadata.tier': 'gold' }] })).toBe(false);
    expect(m({ $and: [{ 'metadata.tier': 'gold' }], $or: [{ 'metadata.region': 'us' }] })).toBe(false);
    expect(m({ $and: [{ 'metadata.tier': 'gold' }], $or: [{ 'metadata.region': 'eu' }], 'params.stream': true })).toBe(true);
  });

  it('matches everything with an empty query', () => {
    expect(m({})).toBe(true);
  });

  it('fails closed on what validation rejects', () => {
    expect(m({ $not: { 'metadata.tier': 'gold' } })).toBe(false);
    expect(m({ 'metadata.tier': { $foo: 1 } })).toBe(false);
    expect(m({ 'metadata.tier': { $eq: 'gold', plain: 1 } })).toBe(false);
    expect(m({ $and: { 'metadata.tier': 'gold' } })).toBe(false);
    expect(m({ $or: ['x'] })).toBe(false);
  });
});

describe('pickConditional', () => {
  const targets: ConfigNode[] = [
    { name: 'premium', provider: 'a' },
    { name: 'cheap', provider: 'b' },
    { name: 'eu', provider: 'c' },
  ];
  const strategy: Strategy = {
    mode: 'conditional',
    conditions: [
      { query: { 'metadata.tier': { $in: ['gold', 'platinum'] }, 'params.max_tokens': { $gt: 1000 } }, then: 'premium' },
      { query: { 'metadata.region': 'eu' }, then: 'eu' },
      { query: { 'metadata.region': 'eu' }, then: 'premium' },
    ],
    default: 'cheap',
  };

  it('takes the first matching condition, in order', () => {
    expect(pickConditional(strategy, targets, ctx)).toBe(2);
    const big = { ...ctx, params: { ...ctx.params, max_tokens: 2000 } };
    expect(pickConditional(strategy, targets, big)).toBe(0);
  });

  it('falls back to default, else undefined', () => {
    const us = { ...ctx, metadata: { tier: 'silver', region: 'us' } };
    expect(pickConditional(strategy, targets, us)).toBe(1);
    const { default: _, ...noDefault } = strategy;
    expect(pickConditional(noDefault, targets, us)).toBeUndefined();
  });

  it('follows the targets it is given, not the ones it first saw', () => {
    const reordered = [targets[2] as ConfigNode, targets[0] as ConfigNode, targets[1] as ConfigNode];
    expect(pickConditional(strategy, targets, ctx)).toBe(2);
    expect(pickConditional(strategy, reordered, ctx)).toBe(0);
  });

  it('skips conditions naming no target', () => {
    const s: Strategy = {
      mode: 'conditional',
      conditions: [
        { query: {}, then: 'ghost' },
        { query: {}, then: 'cheap' },
      ],
    };
    expect(pickConditional(s, targets, ctx)).toBe(1);
  });
});

// ---- Properties ------------------------------------------------------------------------------

const FIELDS = [
  'metadata.tier',
  'metadata.user.id',
  'metadata.missing',
  'params.max_tokens',
  'params.model',
  'params.messages.0.role',
  'url.pathname',
] as const;

const scalar = fc.oneof(
  fc.constantFrom('gold', 'silver', 'gpt-4o', 'gpt-4o-mini', 'system', 'user', '/v1/chat/completions', '/v1/embeddings'),
  fc.integer({ min: 0, max: 2000 }),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.oneof({ weight: 4, arbitrary: scalar }, { weight: 1, arbitrary: fc.array(scalar, { maxLength: 2 }) });
const ordered = fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.constantFrom('gold', 'gpt', 'silver', '/v1/'));

const condition = fc.oneof(
  value,
  value.map(($eq) => ({ $eq })),
  value.map(($ne) => ({ $ne })),
  fc.record({ op: fc.constantFrom('$gt', '$gte', '$lt', '$lte'), operand: ordered }).map(({ op, operand }) => ({ [op]: operand })),
  fc.array(value, { maxLength: 3 }).map(($in) => ({ $in })),
  fc.array(value, { maxLength: 3 }).map(($nin) => ({ $nin })),
  fc.constantFrom('^gpt', 'mini$', 'o', '^/v1/', 'ld').map(($regex) => ({ $regex })),
);

const fieldQuery = fc.dictionary(fc.constantFrom(...FIELDS), condition, { minKeys: 1, maxKeys: 3 });

const query: fc.Arbitrary<Record<string, unknown>> = fc.letrec<{ q: Record<string, unknown> }>((tie) => ({
  q: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fieldQuery,
    fc
      .tuple(fc.constantFrom('$and', '$or'), fc.array(tie('q'), { minLength: 1, maxLength: 3 }), fc.option(fieldQuery, { nil: undefined }))
      .map(([op, subs, siblings]) => ({ ...siblings, [op]: subs })),
  ),
})).q;

const context: fc.Arbitrary<ConditionContext> = fc.record({
  metadata: fc.record({ tier: scalar, user: fc.record({ id: scalar }, { requiredKeys: [] }) }, { requiredKeys: [] }),
  params: fc.record(
    {
      max_tokens: fc.integer({ min: 0, max: 2000 }),
      model: fc.constantFrom('gpt-4o', 'gpt-4o-mini', 'claude'),
      messages: fc.array(fc.record({ role: fc.constantFrom('system', 'user') }), { maxLength: 2 }),
    },
    { requiredKeys: [] },
  ),
  url: fc.record({ pathname: fc.constantFrom('/v1/chat/completions', '/v1/embeddings') }),
});

const RUNS = { seed: 42, numRuns: 300 };

describe('properties', () => {
  it('$and: [a, b] is a AND b', () => {
    fc.assert(
      fc.property(query, query, context, (a, b, c) => m({ $and: [a, b] }, c) === (m(a, c) && m(b, c))),
      RUNS,
    );
  });

  it('$or: [a, b] is a OR b', () => {
    fc.assert(
      fc.property(query, query, context, (a, b, c) => m({ $or: [a, b] }, c) === (m(a, c) || m(b, c))),
      RUNS,
    );
  });

  it('keys beside $and / $or are ANDed with it', () => {
    fc.assert(
      fc.property(fieldQuery, query, query, context, (siblings, a, b, c) => {
        expect(m({ ...siblings, $or: [a, b] }, c)).toBe(m(siblings, c) && (m(a, c) || m(b, c)));
        expect(m({ ...siblings, $and: [a, b] }, c)).toBe(m(siblings, c) && m(a, c) && m(b, c));
      }),
      RUNS,
    );
  });

  it('several keys are the AND of each', () => {
    fc.assert(
      fc.property(fieldQuery, context, (q, c) => m(q, c) === Object.entries(q).every(([k, v]) => m({ [k]: v }, c))),
      RUNS,
    );
  });

  it('$nin is NOT $in, $ne is NOT $eq, and a bare value is $eq', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FIELDS), fc.array(value, { maxLength: 3 }), value, context, (field, list, v, c) => {
        expect(m({ [field]: { $nin: list } }, c)).toBe(!m({ [field]: { $in: list } }, c));
        expect(m({ [field]: { $ne: v } }, c)).toBe(!m({ [field]: { $eq: v } }, c));
        expect(m({ [field]: v }, c)).toBe(m({ [field]: { $eq: v } }, c));
        // $in is an OR of $eq.
        expect(m({ [field]: { $in: list } }, c)).toBe(list.some((item) => m({ [field]: { $eq: item } }, c)));
      }),
      RUNS,
    );
  });

  it('never throws, whatever the query and request', () => {
    const op = fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$regex', '$and', '$or', '$foo', 'plain');
    const wild = fc.dictionary(
      fc.oneof(fc.constantFrom(...FIELDS, '$and', '$or', '$x'), fc.string()),
      fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.dictionary(op, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })),
    );
    const anyCtx = fc.record({
      metadata: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })),
      params: fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 })),
      url: fc.record({ pathname: fc.string() }),
    });
    fc.assert(
      fc.property(wild, anyCtx, (q, c) => {
        expect(typeof m(q, c)).toBe('boolean');
      }),
      RUNS,
    );
  });

  it('finds a value placed at a random depth of a random nested object', () => {
    interface Segment {
      key?: string;
      index?: number;
    }
    const segment = fc.oneof(
      fc.stringMatching(/^[a-z][a-z0-9_]{0,7}$/).map((key): Segment => ({ key })),
      fc.nat({ max: 3 }).map((index): Segment => ({ index })),
    );
    const filler = fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
    // An object with `$` keys would read as operators, not as a value to compare.
    const placedValue = fc.jsonValue({ maxDepth: 2 }).filter((v) => !isRecord(v) || !Object.keys(v).some((k) => k.startsWith('$')));
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 12 }), placedValue, filler, (path, placed, noise) => {
        // Build the container from the inside out, with unrelated keys alongside.
        let node: unknown = placed;
        for (let i = path.length - 1; i >= 0; i--) {
          const seg = path[i] as Segment;
          if (seg.index !== undefined) {
            const arr: unknown[] = Array.from({ length: seg.index + 2 }, (_, j) => ({ filler: j }));
            arr[seg.index] = node;
            node = arr;
          } else {
            const obj: Record<string, unknown> = { ...noise };
            obj[seg.key as string] = node;
            node = obj;
          }
        }
        const dotted = path.map((s) => (s.index !== undefined ? String(s.index) : s.key)).join('.');
        const root = path[0] as Segment;
        // The metadata root must be an object: a leading index goes under a key.
        const metadata = root.index !== undefined ? { list: node } : (node as Record<string, unknown>);
        const field = root.index !== undefined ? `metadata.list.${dotted}` : `metadata.${dotted}`;
        const c: ConditionContext = { metadata, params: {}, url: { pathname: '/' } };
        expect(m({ [field]: placed }, c)).toBe(true);
        expect(m({ [field]: { $eq: placed } }, c)).toBe(true);
        expect(m({ [field]: { $in: [placed] } }, c)).toBe(true);
        expect(m({ [field]: { $ne: placed } }, c)).toBe(false);
        expect(m({ [`${field}.9.nope`]: { $eq: placed } }, c)).toBe(placed === null);
      }),
      { seed: 42, numRuns: 200 },
    );
  });
});
