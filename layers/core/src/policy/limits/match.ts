/**
 * Which requests a policy applies to, and which counter a request goes to. Conditions with the same
 * key are alternatives (any of them), different keys must all hold; `*` matches any value that is
 * present. A request lacking a group-by value is counted in the group of the empty value, so
 * leaving out metadata never escapes a limit.
 */
import { createHash } from 'node:crypto';
import { ENDPOINT_TYPES, type EndpointType } from '../../providers/types.ts';

import type { PolicyCondition, PolicyGroupBy } from '../../store/limits.ts';

export type { PolicyCondition, PolicyGroupBy };

/** What a policy can see of a gateway request. */
export interface LimitContext {
  organisationId: string;
  workspaceId: string;
  apiKeyId: string;
  endpoint: EndpointType;
  metadata: Readonly<Record<string, unknown>>;
}

export const CONDITION_KEYS = ['workspace_id', 'organisation_id', 'api_key', 'endpoint_type'] as const;
export const GROUP_BY_KEYS = ['api_key', 'workspace_id', 'organisation_id'] as const;
/** `metadata.<key>`: metadata keys are what x-gw-metadata accepts, letters to `-` and `.`. */
export const METADATA_KEY = /^metadata\.[A-Za-z0-9_.-]{1,64}$/;

export const isConditionKey = (k: string): boolean => (CONDITION_KEYS as readonly string[]).includes(k) || METADATA_KEY.test(k);
export const isGroupByKey = (k: string): boolean => (GROUP_BY_KEYS as readonly string[]).includes(k) || METADATA_KEY.test(k);
export const isEndpointType = (v: string): v is EndpointType => (ENDPOINT_TYPES as readonly string[]).includes(v);

function metadataValue(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** The request's value for a condition or group-by key; undefined when it has none. */
export function contextValue(ctx: LimitContext, key: string): string | undefined {
  switch (key) {
    case 'workspace_id':
      return ctx.workspaceId;
    case 'organisation_id':
      return ctx.organisationId;
    case 'api_key':
      return ctx.apiKeyId;
    case 'endpoint_type':
      return ctx.endpoint;
    default:
      return key.startsWith('metadata.') ? metadataValue(ctx.metadata[key.slice('metadata.'.length)]) : undefined;
  }
}

export function matchesConditions(conditions: readonly PolicyCondition[], ctx: LimitContext): boolean {
  const byKey = new Map<string, string[]>();
  for (const c of conditions) {
    const list = byKey.get(c.key);
    if (list) list.push(c.value);
    else byKey.set(c.key, [c.value]);
  }
  for (const [key, values] of byKey) {
    const actual = contextValue(ctx, key);
    if (actual === undefined) return false;
    if (!values.some((v) => v === '*' || v === actual)) return false;
  }
  return true;
}

/** `api_key:<id>` or `metadata._user:alice,api_key:<id>`: the group a request is counted in. */
export function groupValueKey(groupBy: readonly PolicyGroupBy[], ctx: LimitContext): string {
  return groupBy.map((g) => `${g.key}:${contextValue(ctx, g.key) ?? ''}`).join(',');
}

/** A short, stable, key-safe id for a group value (the entity id of the admin API). */
export function entityIdOf(valueKey: string): string {
  return createHash('sha256').update(valueKey).digest('base64url').slice(0, 22);
}
