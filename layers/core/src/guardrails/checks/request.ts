/**
 * Checks on who asks for what, before any provider is called: the model (`modelWhitelist`,
 * `modelRules`), the metadata (`requiredMetadataKeys`, `requiredMetadataKeyPairs`) and the request
 * type (`allowedRequestTypes`).
 */
import { ENDPOINT_TYPES } from '../../providers/types.ts';
import type { CheckContext, CheckDefinition } from '../../kernel/guardrails.ts';
import { isRecord, OPERATORS, operatorHolds, paramValidator, str, strings, type Operator } from './params.ts';

const BEFORE = ['beforeRequestHook'] as const;

const modelOf = (ctx: CheckContext): string => str(ctx.request.json.model);

export const modelWhitelist: CheckDefinition = {
  id: 'default.modelWhitelist',
  events: BEFORE,
  validate: paramValidator({ models: { type: 'strings', required: true, nonEmpty: true }, not: { type: 'boolean' } }),
  async run(ctx, p) {
    const model = modelOf(ctx);
    const listed = strings(p.models).includes(model);
    // `not: true` turns the list into a blocklist.
    return { verdict: p.not === true ? !listed : listed, data: { model, listed } };
  },
};

/** The models `rules` allow for this request's metadata: every matching metadata rule's, else the defaults. */
function allowedModels(rules: Record<string, unknown>, metadata: Readonly<Record<string, unknown>>): string[] {
  const byKey = isRecord(rules.metadata) ? rules.metadata : {};
  const allowed: string[] = [];
  for (const [key, byValue] of Object.entries(byKey)) {
    const value = metadata[key];
    if (typeof value === 'string' && isRecord(byValue) && Array.isArray(byValue[value])) allowed.push(...strings(byValue[value]));
  }
  return allowed.length > 0 ? allowed : strings(rules.defaults);
}

export const modelRules: CheckDefinition = {
  id: 'default.modelRules',
  events: BEFORE,
  validate: paramValidator(
    {
      rules: { type: 'object', required: true, fields: { defaults: { type: 'strings' }, metadata: { type: 'record' } } },
      not: { type: 'boolean' },
    },
    (p) => {
      const meta = isRecord(p.rules) && isRecord(p.rules.metadata) ? p.rules.metadata : {};
      return Object.entries(meta).flatMap(([k, byValue]) =>
        isRecord(byValue)
          ? Object.entries(byValue)
              .filter(([, models]) => !Array.isArray(models) || models.some((m) => typeof m !== 'string'))
              .map(([v]) => ({ path: `rules.metadata.${k}.${v}`, message: 'must be an array of model names' }))
          : [{ path: `rules.metadata.${k}`, message: 'must be an object of metadata values to model lists' }],
      );
    },
  ),
  async run(ctx, p) {
    const model = modelOf(ctx);
    const allowed = allowedModels(p.rules as Record<string, unknown>, ctx.metadata);
    const listed = allowed.includes(model);
    return { verdict: p.not === true ? !listed : listed, data: { model, allowed } };
  },
};

export const requiredMetadataKeys: CheckDefinition = {
  id: 'default.requiredMetadataKeys',
  events: BEFORE,
  validate: paramValidator({ metadataKeys: { type: 'strings', required: true, nonEmpty: true }, operator: { type: 'enum', values: OPERATORS } }),
  async run(ctx, p) {
    const keys = strings(p.metadataKeys);
    const present = keys.filter((k) => ctx.metadata[k] !== undefined);
    const operator = (p.operator ?? 'all') as Operator;
    return { verdict: operatorHolds(operator, present.length, keys.length), data: { operator, present, missing: keys.filter((k) => !present.includes(k)) } };
  },
};

/** docs/design/spec.md#guardrail-checks: `metadataPairs` (key to expected value) against `x-gw-metadata`, with `operator` all/any/none. */
export const requiredMetadataKeyPairs: CheckDefinition = {
  id: 'default.requiredMetadataKeyPairs',
  events: BEFORE,
  validate: paramValidator({ metadataPairs: { type: 'record', required: true, values: 'string' }, operator: { type: 'enum', values: OPERATORS } }, (p) =>
    Object.keys(p.metadataPairs as object).length === 0 ? [{ path: 'metadataPairs', message: 'must name at least one key' }] : [],
  ),
  async run(ctx, p) {
    const pairs = Object.entries(p.metadataPairs as Record<string, string>);
    const matched = pairs.filter(([k, v]) => ctx.metadata[k] === v).map(([k]) => k);
    const operator = (p.operator ?? 'all') as Operator;
    return {
      verdict: operatorHolds(operator, matched.length, pairs.length),
      data: { operator, matched, unmatched: pairs.map(([k]) => k).filter((k) => !matched.includes(k)) },
    };
  },
};

/** The reference's request types, plus every endpoint type Gantry names. */
export const REQUEST_TYPES: readonly string[] = [...new Set<string>([...ENDPOINT_TYPES, 'realtime', 'messages'])];

export const allowedRequestTypes: CheckDefinition = {
  id: 'default.allowedRequestTypes',
  events: BEFORE,
  validate: paramValidator({ allowedTypes: { type: 'strings', values: REQUEST_TYPES }, blockedTypes: { type: 'strings', values: REQUEST_TYPES } }, (p) =>
    p.allowedTypes === undefined && p.blockedTypes === undefined ? [{ path: 'allowedTypes', message: 'allowedTypes or blockedTypes is required' }] : [],
  ),
  async run(ctx, p) {
    const type = ctx.requestType;
    const allowed = strings(p.allowedTypes);
    // Blocked types win over allowed ones; an empty list does not constrain.
    const blocked = strings(p.blockedTypes).includes(type);
    const verdict = !blocked && (allowed.length === 0 || allowed.includes(type));
    return { verdict, data: { request_type: type, blocked } };
  },
};
