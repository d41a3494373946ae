import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ValidationError, type FieldProblem } from '../../../../../layers/core/src/http/errors.ts';
import { leaves } from '../../../../../layers/core/src/gateway/routing/inherit.ts';
import { configProblems, MAX_DEPTH, MAX_TARGETS, parseConfig, parseConfigHeader } from '../../../../../layers/core/src/gateway/routing/validate.ts';

const leaf = { provider: 'openai', api_key: 'sk-test' };
const named = (name: string, extra: Record<string, unknown> = {}) => ({ name, ...leaf, ...extra });
const fallback = (...targets: unknown[]) => ({ strategy: { mode: 'fallback' }, targets });
const conditional = (conditions: unknown, targets: unknown[] = [named('a'), named('b')], extra: Record<string, unknown> = {}) => ({
  strategy: { mode: 'conditional', conditions, ...extra },
  targets,
});
const withQuery = (query: unknown) => conditional([{ query, then: 'a' }]);
const Q = 'strategy.conditions[0].query';

/** A config whose targets nest `levels` deep below the root, one target per level. */
function nested(levels: number): Record<string, unknown> {
  let node: Record<string, unknown> = { ...leaf };
  for (let i = 0; i < levels; i++) node = { strategy: { mode: 'single' }, targets: [node] };
  return node;
}

function rejection(raw: unknown, parse: (raw: unknown) => unknown = parseConfig): ValidationError {
  try {
    parse(raw);
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('expected the config to be rejected');
}

const key = (p: FieldProblem): string => `${p.path} :: ${p.message}`;
const sorted = (problems: readonly FieldProblem[]): string[] => problems.map(key).sort();

type Case = [title: string, config: unknown, expected: [path: string, message: string][]];

const MODES = 'must be one of single, loadbalance, fallback, conditional';
const FIELD_OPS = 'unknown operator; expected one of $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $regex';
const UNSENDABLE = 'must not contain line breaks, control characters or characters outside Latin-1';

const invalid: Case[] = [
  // The config itself
  ['root is an array', [], [['', 'config must be a JSON object']]],
  ['root is a string', 'fallback', [['', 'config must be a JSON object']]],
  ['root is null', null, [['', 'config must be a JSON object']]],
  ['root names no provider', { retry: { attempts: 2 } }, [['', 'config names no provider or virtual_key']]],

  // Strategy and targets
  ['unknown mode', { strategy: { mode: 'roundrobin' }, targets: [leaf] }, [['strategy.mode', MODES]]],
  ['missing mode', { strategy: {}, targets: [leaf] }, [['strategy.mode', 'is required']]],
  ['strategy is a string', { strategy: 'fallback', targets: [leaf] }, [['strategy', 'must be an object']]],
  ['strategy without targets', { strategy: { mode: 'fallback' }, ...leaf }, [['targets', 'is required when strategy is set']]],
  ['targets without strategy', { targets: [leaf] }, [['strategy', 'is required when targets is set']]],
  ['empty targets', { strategy: { mode: 'single' }, targets: [] }, [['targets', 'must have at least 1 item']]],
  ['targets is an object', { strategy: { mode: 'single' }, targets: { a: leaf } }, [['targets', 'must be an array']]],
  ['a target is not an object', fallback(leaf, 'openai'), [['targets[1]', 'must be an object']]],
  ['negative weight', { strategy: { mode: 'loadbalance' }, targets: [leaf, { ...leaf, weight: -1 }] }, [['targets[1].weight', 'must be >= 0']]],
  ['weight as a string', { strategy: { mode: 'loadbalance' }, targets: [{ ...leaf, weight: '2' }] }, [['targets[0].weight', 'must be a number']]],
  [
    'all weights 0',
    {
      strategy: { mode: 'loadbalance' },
      targets: [
        { ...leaf, weight: 0 },
        { ...leaf, weight: 0 },
      ],
    },
    [['targets', 'all weights are 0']],
  ],
  [
    'on_status_codes outside fallback',
    { strategy: { mode: 'loadbalance', on_status_codes: [429] }, targets: [leaf] },
    [['strategy.on_status_codes', 'is only allowed with mode fallback']],
  ],
  [
    'bad on_status_codes',
    { strategy: { mode: 'fallback', on_status_codes: [99, 600, 500.5, '429'] }, targets: [leaf] },
    [
      ['strategy.on_status_codes[0]', 'must be between 100 and 599'],
      ['strategy.on_status_codes[1]', 'must be between 100 and 599'],
      ['strategy.on_status_codes[2]', 'must be an integer'],
      ['strategy.on_status_codes[3]', 'must be an integer'],
    ],
  ],
  [
    'conditional without conditions',
    { strategy: { mode: 'conditional' }, targets: [named('a')] },
    [['strategy.conditions', 'is required with mode conditional']],
  ],
  [
    'conditions outside conditional',
    { strategy: { mode: 'fallback', conditions: [{ query: {}, then: 'a' }] }, targets: [named('a')] },
    [['strategy.conditions', 'is only allowed with mode conditional']],
  ],
  [
    'default outside conditional',
    { strategy: { mode: 'loadbalance', default: 'a' }, targets: [named('a')] },
    [['strategy.default', 'is only allowed with mode conditional']],
  ],
  ['empty conditions', conditional([]), [['strategy.conditions', 'must have at least 1 item']]],
  [
    'condition without then, with a query that is not an object',
    conditional([{ query: ['params.model'] }]),
    [
      ['strategy.conditions[0].query', 'must be an object'],
      ['strategy.conditions[0].then', 'is required'],
    ],
  ],
  [
    'then names no target',
    conditional([
      { query: {}, then: 'a' },
      { query: {}, then: 'x' },
    ]),
    [['strategy.conditions[1].then', 'no target named "x"']],
  ],
  ['default names no target', conditional([{ query: {}, then: 'a' }], undefined, { default: 'zz' }), [['strategy.default', 'no target named "zz"']]],
  [
    'then names a grandchild, not a direct target',
    conditional([{ query: {}, then: 'deep' }], [named('a'), fallback(named('deep'))]),
    [['strategy.conditions[0].then', 'no target named "deep"']],
  ],
  ['duplicate sibling names', fallback(named('a'), named('b'), named('a')), [['targets[2].name', 'duplicate name "a" among sibling targets']]],
  ['empty name', fallback({ ...leaf, name: '' }), [['targets[0].name', 'must not be empty']]],

  // Retry
  ['retry.attempts above 5', { ...leaf, retry: { attempts: 6 } }, [['retry.attempts', 'must be at most 5']]],
  ['negative retry.attempts', { ...leaf, retry: { attempts: -1 } }, [['retry.attempts', 'must be at least 0']]],
  ['fractional retry.attempts', { ...leaf, retry: { attempts: 1.5 } }, [['retry.attempts', 'must be an integer']]],
  ['retry without attempts', { ...leaf, retry: { on_status_codes: [429] } }, [['retry.attempts', 'is required']]],
  ['retry is a number', { ...leaf, retry: 3 }, [['retry', 'must be an object']]],
  [
    'retry.use_retry_after_header not boolean',
    { ...leaf, retry: { attempts: 1, use_retry_after_header: 'yes' } },
    [['retry.use_retry_after_header', 'must be a boolean']],
  ],
  [
    'retry.on_status_codes out of range',
    { ...leaf, retry: { attempts: 1, on_status_codes: [42] } },
    [['retry.on_status_codes[0]', 'must be between 100 and 599']],
  ],

  // Timeout, cache, host, headers, flags
  ['request_timeout 0', { ...leaf, request_timeout: 0 }, [['request_timeout', 'must be between 1 and 900000']]],
  ['request_timeout above 15 minutes', { ...leaf, request_timeout: 900_001 }, [['request_timeout', 'must be between 1 and 900000']]],
  ['fractional request_timeout', { ...leaf, request_timeout: 1.5 }, [['request_timeout', 'must be an integer']]],
  ['unknown cache mode', { ...leaf, cache: { mode: 'fast' } }, [['cache.mode', 'must be one of simple, semantic']]],
  ['cache without mode', { ...leaf, cache: { max_age: 60 } }, [['cache.mode', 'is required']]],
  [
    'nested cache.max_age 0',
    fallback({ strategy: { mode: 'fallback' }, targets: [leaf, leaf, { ...leaf, cache: { mode: 'simple', max_age: 0 } }] }),
    [['targets[0].targets[2].cache.max_age', 'must be at least 1']],
  ],
  [
    'similarity_threshold above 1',
    { ...leaf, cache: { mode: 'semantic', similarity_threshold: 1.5 } },
    [['cache.similarity_threshold', 'must be between 0 and 1']],
  ],
  [
    'embedding without model, with a bad custom_host',
    { ...leaf, cache: { mode: 'semantic', embedding: { provider: 'openai', custom_host: 'nope' } } },
    [
      ['cache.embedding.model', 'is required'],
      ['cache.embedding.custom_host', 'must be an http or https URL'],
    ],
  ],
  ['custom_host not a URL', { ...leaf, custom_host: 'not a url' }, [['custom_host', 'must be an http or https URL']]],
  ['custom_host with a file scheme', { ...leaf, custom_host: 'file:///etc/passwd' }, [['custom_host', 'must be an http or https URL']]],
  ['forward_headers is a string', { ...leaf, forward_headers: 'x-user' }, [['forward_headers', 'must be an array']]],
  [
    'forward_headers items',
    { ...leaf, forward_headers: ['x-ok', 1, 'bad header'] },
    [
      ['forward_headers[1]', 'must be a string'],
      ['forward_headers[2]', 'must be a header name'],
    ],
  ],
  ['strict_openai_compliance as a string', { ...leaf, strict_openai_compliance: 'false' }, [['strict_openai_compliance', 'must be a boolean']]],
  ['passthrough neither allow nor deny', { ...leaf, passthrough: 'block' }, [['passthrough', 'must be one of allow, deny']]],
  ['passthrough as a boolean on a target', fallback({ ...leaf, passthrough: false }), [['targets[0].passthrough', 'must be one of allow, deny']]],
  ['override_params is an array', { ...leaf, override_params: ['model'] }, [['override_params', 'must be an object']]],
  [
    'bad provider and api_key',
    { provider: '', api_key: 5 },
    [
      ['provider', 'must not be empty'],
      ['api_key', 'must be a string'],
    ],
  ],
  ['virtual_key not a string', { virtual_key: true }, [['virtual_key', 'must be a string']]],
  // Values sent to the provider in headers: one HTTP line of Latin-1 each
  ['api_key with a line break', { provider: 'openai', api_key: 'sk-a\r\nx-injected: 1' }, [['api_key', UNSENDABLE]]],
  ['api_key past Latin-1', { provider: 'openai', api_key: 'sk-\u2028' }, [['api_key', UNSENDABLE]]],
  ['api_key of a target, with a NUL', fallback(leaf, { provider: 'openai', api_key: 'sk-\u0000' }), [['targets[1].api_key', UNSENDABLE]]],
  [
    'cache embedding api_key',
    { ...leaf, cache: { mode: 'semantic', embedding: { provider: 'openai', model: 'e', api_key: 'k\n' } } },
    [['cache.embedding.api_key', UNSENDABLE]],
  ],
  ['a provider option with a line break', { ...leaf, openai_organization: 'org\nx' }, [['openai_organization', UNSENDABLE]]],
  ['an unlisted snake_case option past Latin-1', { ...leaf, custom_option: '\u{1F600}' }, [['custom_option', UNSENDABLE]]],
  ['hooks not an array', { ...leaf, before_request_hooks: { id: 'h' } }, [['before_request_hooks', 'must be an array']]],
  ['guardrail entry of the wrong type', { ...leaf, input_guardrails: ['pii-check', 7] }, [['input_guardrails[1]', 'must be a string or an object']]],

  // Leaves must lead somewhere, after inheritance
  ['a leaf names no provider', fallback(leaf, { virtual_key: 'vk-1' }, { api_key: 'sk' }), [['targets[2]', 'names no provider or virtual_key']]],
  [
    'only the leaves outside the providing parent are reported',
    fallback({ provider: 'anthropic', strategy: { mode: 'fallback' }, targets: [{ api_key: 'k' }] }, { override_params: { model: 'x' } }),
    [['targets[1]', 'names no provider or virtual_key']],
  ],

  // Unknown keys
  [
    'typo of strategy',
    { stratgy: { mode: 'fallback' }, targets: [leaf] },
    [
      ['stratgy', 'unknown key; did you mean "strategy"?'],
      ['strategy', 'is required when targets is set'],
    ],
  ],
  ['camelCase key', { ...leaf, overrideParams: {} }, [['overrideParams', 'unknown key; did you mean "override_params"?']]],
  [
    "the peer's spelling",
    { ...leaf, strict_open_ai_compliance: false },
    [['strict_open_ai_compliance', 'unknown key; did you mean "strict_openai_compliance"?']],
  ],
  ['mode on the node', { ...leaf, mode: 'fallback' }, [['mode', 'unknown key; did you mean "strategy.mode"?']]],
  ['retries for retry', { ...leaf, retries: 3 }, [['retries', 'unknown key; did you mean "retry"?']]],
  ['key that is not snake_case', { ...leaf, 'Some Key': 1 }, [['Some Key', 'unknown key']]],
  ['typo in retry', { ...leaf, retry: { attempts: 1, atempts: 2 } }, [['retry.atempts', 'unknown key; did you mean "attempts"?']]],
  ['unknown key in strategy', { strategy: { mode: 'fallback', fallback_codes: [500] }, targets: [leaf] }, [['strategy.fallback_codes', 'unknown key']]],
  ['unknown key in cache', { ...leaf, cache: { mode: 'simple', maxAge: 60 } }, [['cache.maxAge', 'unknown key; did you mean "max_age"?']]],
  [
    'typo in a condition',
    conditional([{ query: {}, thn: 'a' }]),
    [
      ['strategy.conditions[0].then', 'is required'],
      ['strategy.conditions[0].thn', 'unknown key; did you mean "then"?'],
    ],
  ],

  // Queries
  ['unknown field operator', withQuery({ 'params.x': { $foo: 1 } }), [[`${Q}.params.x.$foo`, FIELD_OPS]]],
  ['unknown top-level operator', withQuery({ $not: { 'params.x': 1 } }), [[`${Q}.$not`, 'unknown operator; expected $and, $or or a field path']]],
  ['field operator at the top', withQuery({ $eq: 1 }), [[`${Q}.$eq`, 'must be applied to a field, e.g. {"params.model": {"$eq": "gpt-4o"}}']]],
  [
    '$in and $nin need arrays',
    withQuery({ 'metadata.tier': { $in: 'gold' }, 'metadata.region': { $nin: 3 } }),
    [
      [`${Q}.metadata.tier.$in`, 'must be an array'],
      [`${Q}.metadata.region.$nin`, 'must be an array'],
    ],
  ],
  [
    'bad $regex values',
    withQuery({ 'params.a': { $regex: '(' }, 'params.b': { $regex: 'a'.repeat(513) }, 'params.c': { $regex: 5 } }),
    [
      [`${Q}.params.a.$regex`, 'is not a valid regular expression'],
      [`${Q}.params.b.$regex`, 'must be at most 512 characters'],
      [`${Q}.params.c.$regex`, 'must be a string'],
    ],
  ],
  [
    'bad $and / $or',
    withQuery({ $and: { 'params.x': 1 }, $or: [] }),
    [
      [`${Q}.$and`, 'must be an array of queries'],
      [`${Q}.$or`, 'must have at least 1 item'],
    ],
  ],
  [
    'problems inside $and / $or sub-queries',
    withQuery({ $or: [{ 'params.x': { $bad: 1 } }, 'x', { $and: [{ 'params.y': { $gt: {} } }] }] }),
    [
      [`${Q}.$or[0].params.x.$bad`, FIELD_OPS],
      [`${Q}.$or[1]`, 'must be an object'],
      [`${Q}.$or[2].$and[0].params.y.$gt`, 'must be a number or a string'],
    ],
  ],
  ['operators mixed with plain keys', withQuery({ 'params.x': { $gt: 1, tier: 'a' } }), [[`${Q}.params.x.tier`, 'cannot be mixed with operators']]],
  ['$and on a field', withQuery({ 'params.x': { $and: [] } }), [[`${Q}.params.x.$and`, 'is only allowed at the top of a query']]],
  [
    'field paths',
    withQuery({ 'user.tier': 'gold', 'url.host': 'x', 'params..model': 'y' }),
    [
      [`${Q}.user.tier`, 'must start with metadata., params. or url.'],
      [`${Q}.url.host`, 'must be url.pathname'],
      [`${Q}.params..model`, 'is not a valid field path'],
    ],
  ],
  [
    'query nested too deeply',
    withQuery(Array.from({ length: 11 }).reduce<Record<string, unknown>>((q) => ({ $and: [q] }), { 'params.x': 1 })),
    [[`${Q}${'.$and[0]'.repeat(11)}`, 'must not nest deeper than 10 levels']],
  ],
  [
    'compared value nested too deeply',
    withQuery({ 'params.x': Array.from({ length: 33 }).reduce((v) => [v], 1) }),
    [[`${Q}.params.x`, 'must not nest deeper than 32 levels']],
  ],

  // Limits
  ['targets nested too deeply', nested(MAX_DEPTH + 1), [[`${'targets[0].'.repeat(MAX_DEPTH)}targets`, 'must not nest deeper than 10 levels']]],
  [
    'too many targets',
    { strategy: { mode: 'loadbalance' }, targets: Array.from({ length: MAX_TARGETS + 1 }, () => leaf) },
    [['targets', 'exceeds the limit of 100 targets in one config']],
  ],
  [
    'too many targets over several levels',
    fallback(
      { strategy: { mode: 'loadbalance' }, targets: Array.from({ length: 60 }, () => leaf) },
      { strategy: { mode: 'loadbalance' }, targets: Array.from({ length: 60 }, () => leaf) },
    ),
    [['targets[1].targets', 'exceeds the limit of 100 targets in one config']],
  ],
];

describe('parseConfig: invalid configs', () => {
  it('has a table of at least 40 cases', () => {
    expect(invalid.length).toBeGreaterThanOrEqual(40);
  });

  it.each(invalid)('%s', (_title, config, expected) => {
    const err = rejection(config);
    expect(sorted(err.problems)).toEqual(expected.map(([path, message]) => `${path} :: ${message}`).sort());
    expect(err.status).toBe(400);
    expect(err.code).toBe('AB01');
  });

  it('reports all five problems of one config at once', () => {
    const config = {
      strategy: { mode: 'fallback', on_status_codes: [429, 700] },
      retry: { attempts: 10 },
      targets: [
        { ...leaf, weight: -2 },
        { ...leaf, cache: { mode: 'simple', max_age: 0 } },
        { stratgy: 1, ...leaf },
      ],
    };
    const err = rejection(config);
    expect(sorted(err.problems)).toEqual(
      [
        'strategy.on_status_codes[1] :: must be between 100 and 599',
        'retry.attempts :: must be at most 5',
        'targets[0].weight :: must be >= 0',
        'targets[1].cache.max_age :: must be at least 1',
        'targets[2].stratgy :: unknown key; did you mean "strategy"?',
      ].sort(),
    );
    for (const p of err.problems) expect(err.message).toContain(`${p.path}: ${p.message}`);
    expect(err.param).toBe(err.problems[0]?.path);
  });
});

describe('parseConfig: valid configs', () => {
  const valid: [string, Record<string, unknown>][] = [
    [
      'fallback with on_status_codes',
      {
        strategy: { mode: 'fallback', on_status_codes: [429, 500, 503] },
        targets: [
          { provider: 'openai', api_key: 'sk-1', override_params: { model: 'gpt-4o' } },
          { provider: 'anthropic', api_key: 'sk-ant', override_params: { model: 'claude-sonnet-4', max_tokens: 1024 } },
        ],
      },
    ],
    [
      'loadbalance nested in fallback',
      {
        strategy: { mode: 'fallback' },
        retry: { attempts: 3, on_status_codes: [429, 503], use_retry_after_header: true },
        targets: [
          {
            strategy: { mode: 'loadbalance' },
            targets: [
              { virtual_key: 'openai-vk-a', weight: 0.7 },
              { virtual_key: 'openai-vk-b', weight: 0.3 },
              { virtual_key: 'openai-vk-c', weight: 0 },
            ],
          },
          { provider: 'bedrock', aws_region: 'eu-west-1', aws_access_key_id: 'AKIA', aws_secret_access_key: 's' },
        ],
      },
    ],
    [
      'conditional with default',
      {
        strategy: {
          mode: 'conditional',
          conditions: [
            { query: { 'metadata.user.tier': { $in: ['gold', 'platinum'] } }, then: 'premium' },
            {
              query: {
                $or: [{ 'params.model': { $regex: '^gpt-4' } }, { 'params.max_tokens': { $gt: 1000, $lte: 4000 } }],
                'url.pathname': '/v1/chat/completions',
              },
              then: 'premium',
            },
            { query: { 'params.messages.0.role': 'system', 'metadata.beta': { $ne: null } }, then: 'cheap' },
          ],
          default: 'cheap',
        },
        targets: [
          { name: 'premium', provider: 'openai', api_key: 'sk-1', override_params: { model: 'gpt-4o' } },
          { name: 'cheap', provider: 'openai', api_key: 'sk-1', override_params: { model: 'gpt-4o-mini' } },
        ],
      },
    ],
    ['deep nesting up to the limit', nested(MAX_DEPTH)],
    [
      'the provider and cache come from a parent',
      {
        provider: 'azure-openai',
        azure_resource_name: 'res',
        azure_deployment_id: 'dep',
        azure_api_version: '2024-06-01',
        cache: { mode: 'semantic', max_age: 3600, similarity_threshold: 0.9, embedding: { provider: 'openai', model: 'text-embedding-3-small' } },
        strategy: { mode: 'loadbalance' },
        targets: [{ api_key: 'k1' }, { api_key: 'k2', weight: 2 }],
      },
    ],
    [
      'every optional field set',
      {
        name: 'root',
        provider: 'openai',
        api_key: 'sk',
        weight: 1,
        override_params: { temperature: 0 },
        retry: { attempts: 0 },
        request_timeout: 900_000,
        cache: { mode: 'simple' },
        custom_host: 'https://llm.example.com/v1',
        forward_headers: ['x-user-id', 'X-Request-Id'],
        strict_openai_compliance: false,
        before_request_hooks: [{ type: 'guardrail', id: 'g1', checks: [] }],
        after_request_hooks: [],
        input_guardrails: ['pii-guard'],
        output_guardrails: [{ id: 'g2' }],
        openai_project: 'proj',
        openai_organization: 'org',
        deployment_region: 'eu',
      },
    ],
    ['exactly the target limit', { strategy: { mode: 'loadbalance' }, targets: Array.from({ length: MAX_TARGETS }, () => leaf) }],
    ['an empty query matches everything', conditional([{ query: {}, then: 'b' }])],
    ['a key with dots in metadata and a null comparison', conditional([{ query: { 'metadata.app.version': '1.2', 'params.user': null }, then: 'a' }])],
  ];

  it.each(valid)('%s', (_title, config) => {
    expect(configProblems(config)).toEqual([]);
    expect(parseConfig(config)).toBe(config);
    // What validation accepts routes every leaf somewhere.
    for (const target of leaves(parseConfig(config))) expect(target.provider ?? target.virtual_key).toBeDefined();
  });

  it('lets a leaf take its provider from the request', () => {
    expect(() => parseConfig({ retry: { attempts: 2 } })).toThrow(ValidationError);
    expect(parseConfig({ retry: { attempts: 2 } }, { requestProvider: true })).toEqual({ retry: { attempts: 2 } });
  });
});

describe('parseConfigHeader', () => {
  it('parses inline JSON', () => {
    const raw = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [leaf, leaf] });
    expect(parseConfigHeader(raw)).toEqual(JSON.parse(raw));
  });

  it('names the header when the JSON is invalid', () => {
    const err = rejection('{"strategy": ', (raw) => parseConfigHeader(raw as string));
    expect(err.problems).toEqual([{ path: 'x-gw-config', message: 'is not valid JSON' }]);
    expect(err.param).toBe('x-gw-config');
  });

  it('reports config problems with config paths', () => {
    const err = rejection('{"strategy": {"mode": "x"}, "targets": [{"provider": "openai"}]}', (raw) => parseConfigHeader(raw as string));
    expect(err.problems).toEqual([{ path: 'strategy.mode', message: MODES }]);
  });
});

describe('parseConfig: robustness', () => {
  const keys = [
    'strategy',
    'targets',
    'name',
    'weight',
    'provider',
    'retry',
    'cache',
    'custom_host',
    'override_params',
    'mode',
    'conditions',
    'query',
    'then',
    'attempts',
    '$and',
    'params.x',
    '__proto__',
    'constructor',
  ];
  const configish = fc.letrec((tie) => ({
    node: fc.dictionary(
      fc.constantFrom(...keys),
      fc.oneof({ maxDepth: 4 }, fc.jsonValue({ maxDepth: 2 }), tie('node'), fc.array(tie('node'), { maxLength: 3 })),
    ),
  })).node;

  it('only ever throws ValidationError, for arbitrary JSON and config-like objects', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), configish), (raw) => {
        try {
          parseConfig(raw);
        } catch (err) {
          expect(err).toBeInstanceOf(ValidationError);
          expect((err as ValidationError).problems.length).toBeGreaterThan(0);
        }
      }),
      { seed: 42, numRuns: 300 },
    );
  });
});
