/**
 * The models of a managed provider (`x-gw-provider: @slug`, or a config naming one) for
 * `GET /v1/models`: the integration's allowed models when it restricts them, else what the
 * provider's own `/models` lists (called with the stored key, through the same target caller and
 * SSRF checks as any request), else the catalog for the provider's kind.
 */
import type { CoreDeps } from '../deps.ts';
import { ForbiddenError, GantryError, ValidationError } from '../http/errors.ts';
import { readCapped } from '../http/node-streams.ts';
import type { Principal } from '../kernel/principal.ts';
import { catalogModels } from '../pricing/catalog.ts';
import { createTargetCaller, type CallInput } from './call-target.ts';
import { withManagedProviders } from './managed.ts';

export interface ManagedModels {
  /** The registry provider behind the slug. */
  provider: string;
  /** Model ids, in the order their source gave them. */
  ids: string[];
  source: 'allowed_models' | 'provider' | 'catalog';
}

/** A provider's model list is small; a larger answer is not one. */
const MAX_LIST_BYTES = 2 << 20;
/** The listing must not hang the client on a slow provider: the catalog answers instead. */
const LIST_TIMEOUT_MS = 10_000;

export async function managedModels(deps: CoreDeps, principal: Principal, value: string, field: string): Promise<ManagedModels> {
  const slug = value.slice(1);
  const cred =
    principal.workspaceId === null || !slug ? undefined : await deps.managedProviders.lookup(principal.organisationId, principal.workspaceId, 'provider', slug);
  if (!cred) throw ValidationError.field(field, `no provider "${value}" in this workspace`);
  if (cred.refusal) throw new ForbiddenError(cred.refusal, { param: field });
  if (cred.allowedModels.length > 0) return { provider: cred.provider, ids: [...cred.allowedModels], source: 'allowed_models' };
  const listed = await providerList(deps, principal, value);
  if (listed) return { provider: cred.provider, ids: listed, source: 'provider' };
  return { provider: cred.provider, ids: catalogModels(cred.provider).map((m) => m.id), source: 'catalog' };
}

/** The ids the provider's `GET /models` lists, or undefined when it cannot be read (any failure). */
async function providerList(deps: CoreDeps, principal: Principal, value: string): Promise<string[] | undefined> {
  const call: CallInput = {
    endpoint: 'proxy',
    method: 'GET',
    body: { kind: 'none' },
    params: {},
    subPath: '/models',
    search: '',
    clientHeaders: new Headers(),
    forwardHeaders: [],
    headerTimeoutMs: LIST_TIMEOUT_MS,
    fromHeaders: true,
  };
  const caller = withManagedProviders(createTargetCaller(deps, call), deps, principal, { clientHeaders: call.clientHeaders, params: {} });
  try {
    const attempt = await caller({ path: 'config', provider: value, override_params: {}, strict_openai_compliance: false, options: {} });
    if (!attempt.body) return undefined;
    if (attempt.status < 200 || attempt.status >= 300) {
      attempt.body.destroy();
      return undefined;
    }
    const read = await readCapped(attempt.body, MAX_LIST_BYTES);
    return read.truncated ? undefined : idsOf(read.bytes.toString('utf8'));
  } catch (err) {
    // A managed refusal (expired, archived) is the client's answer; a provider failure is not.
    if (err instanceof GantryError && err.status < 500) throw err;
    return undefined;
  }
}

/** `{data: [{id}]}` (OpenAI and most providers) or `{models: [{id|name}]}`; undefined for anything else. */
function idsOf(text: string): string[] | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object') return undefined;
  const list = (parsed as { data?: unknown; models?: unknown }).data ?? (parsed as { models?: unknown }).models;
  if (!Array.isArray(list)) return undefined;
  const ids = list
    .map((m: unknown) => (m !== null && typeof m === 'object' ? ((m as { id?: unknown; name?: unknown }).id ?? (m as { name?: unknown }).name) : undefined))
    .filter((id): id is string => typeof id === 'string' && id !== '');
  return ids.length > 0 ? ids : undefined;
}
