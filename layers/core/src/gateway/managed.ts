/**
 * Managed providers at the gateway. A target that names a provider as `@slug` (x-gw-provider, a
 * config target's `provider`, or the model `"@slug/gpt-4o"`), or a virtual key (x-gw-virtual-key,
 * a config's `virtual_key`), is looked up in the caller's workspace and rewritten before it is
 * called: the real provider id, the stored key, the integration's base URL and provider options.
 *
 * Lookups are cached in memory for the key cache TTL (a warm provider costs no DynamoDB or KMS
 * call) and dropped at once when this process changes an integration, provider or virtual key.
 * Decrypted keys live only in that cache and in the rewritten target; they are never logged and
 * never reach the GatewayRecord (which keeps the target the routing engine chose, not this one).
 */
import { ForbiddenError, GantryError, InternalError, ValidationError } from '../http/errors.ts';
import type { TargetBudget } from '../kernel/lifecycle.ts';
import type { Principal } from '../kernel/principal.ts';
import type { Cipher } from '../ports/cipher.ts';
import type { Clock } from '../ports/clock.ts';
import { integrationContext, openCredentials, virtualKeyContext, type Credentials } from '../store/credentials.ts';
// Entities, not repositories: the gateway reads three items and bundles no write path.
import { Integration, Provider, providerKey } from '../store/integrations.ts';
import type { TableClient } from '../store/repositories.ts';
import { VirtualKey, virtualKeyKey } from '../store/virtual-keys.ts';
import { parseUsageLimit } from '../kernel/limits.ts';
import type { Attempt, TargetCaller } from './routing/execute.ts';
import type { SecretMapping } from '../ports/secret-managers.ts';
import type { SecretResolver } from '../secrets/resolver.ts';
import type { ResolvedTarget } from '../kernel/routing.ts';

export type ManagedKind = 'provider' | 'virtual_key';

/** A managed provider or virtual key, ready to call. */
export interface ManagedCredential {
  kind: ManagedKind;
  slug: string;
  /** A provider id of the registry. */
  provider: string;
  apiKey?: string;
  customHost?: string;
  /** Provider options from the configuration (secret fields decrypted). */
  options: Record<string, unknown>;
  /** Empty: every model. */
  allowedModels: readonly string[];
  expiresAt: string | null;
  /** Set when it exists but may not be used (integration archived, workspace no longer allowed). */
  refusal?: string;
  /** A provider's budget, and the provider's id that names its counter. */
  budget?: Omit<TargetBudget, 'slug'>;
  /** Fields whose values are fetched from secret managers at request time (never cached here). */
  secretMappings?: readonly SecretMapping[];
}

export interface ManagedProviderSource {
  /** Looks `slug` up in the workspace, as `kind` first and then as the other kind. */
  lookup(organisationId: string, workspaceId: string, kind: ManagedKind, slug: string): Promise<ManagedCredential | undefined>;
  /** Drops everything cached, after this process changed an integration, provider or virtual key. */
  invalidate(): void;
}

interface Entry {
  value: Promise<ManagedCredential | undefined>;
  at: number;
  /** Misses are remembered briefly; hits for the full TTL. */
  ttl: number;
}

export interface ManagedCacheOptions {
  ttlMs: number;
  negativeTtlMs?: number;
  maxEntries?: number;
}

function fromCredentials(
  kind: ManagedKind,
  slug: string,
  provider: string,
  plain: Record<string, unknown>,
  creds: Credentials,
): Pick<ManagedCredential, 'kind' | 'slug' | 'provider' | 'apiKey' | 'customHost' | 'options'> {
  const { custom_host: customHost, ...rest } = plain;
  return {
    kind,
    slug,
    provider,
    ...(creds.key !== undefined ? { apiKey: creds.key } : {}),
    ...(typeof customHost === 'string' ? { customHost } : {}),
    options: { ...rest, ...creds.config },
  };
}

export class ManagedProviderCache implements ManagedProviderSource {
  readonly #table: TableClient;
  readonly #cipher: Cipher;
  readonly #clock: Clock;
  readonly #ttl: number;
  readonly #negativeTtl: number;
  readonly #max: number;
  readonly #entries = new Map<string, Entry>();
  #generation = 0;
  #lastSweep = 0;

  constructor(table: TableClient, cipher: Cipher, clock: Clock, opts: ManagedCacheOptions) {
    this.#table = table;
    this.#cipher = cipher;
    this.#clock = clock;
    this.#ttl = opts.ttlMs;
    this.#negativeTtl = opts.negativeTtlMs ?? Math.min(opts.ttlMs, 2_000);
    this.#max = opts.maxEntries ?? 5_000;
  }

  lookup(organisationId: string, workspaceId: string, kind: ManagedKind, slug: string): Promise<ManagedCredential | undefined> {
    const id = `${organisationId}/${workspaceId}/${kind}/${slug}`;
    const now = this.#clock.now();
    this.#sweep(now);
    const hit = this.#entries.get(id);
    if (hit && now - hit.at < hit.ttl) return hit.value;

    const generation = this.#generation;
    const value = this.#load(organisationId, workspaceId, kind, slug);
    const entry: Entry = { value, at: now, ttl: this.#ttl };
    if (this.#entries.size >= this.#max) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(id, entry);
    value.then(
      (found) => {
        // An invalidate while loading: what was read may predate the change, so keep nothing.
        if (generation !== this.#generation) this.#forget(id, entry);
        else if (!found) entry.ttl = this.#negativeTtl;
      },
      () => this.#forget(id, entry),
    );
    return value;
  }

  invalidate(): void {
    this.#generation++;
    this.#entries.clear();
  }

  #forget(id: string, entry: Entry): void {
    if (this.#entries.get(id) === entry) this.#entries.delete(id);
  }

  /** Decrypted keys stay in memory for the TTL only. */
  #sweep(now: number): void {
    if (now - this.#lastSweep < Math.max(this.#ttl, 1_000)) return;
    this.#lastSweep = now;
    for (const [id, entry] of this.#entries) if (now - entry.at >= entry.ttl) this.#entries.delete(id);
  }

  async #load(org: string, ws: string, kind: ManagedKind, slug: string): Promise<ManagedCredential | undefined> {
    const order: ManagedKind[] = kind === 'provider' ? ['provider', 'virtual_key'] : ['virtual_key', 'provider'];
    for (const k of order) {
      const found = k === 'provider' ? await this.#loadProvider(org, ws, slug) : await this.#loadVirtualKey(org, ws, slug);
      if (found) return found;
    }
    return undefined;
  }

  async #loadProvider(org: string, ws: string, slug: string): Promise<ManagedCredential | undefined> {
    // Consistent: a provider created a moment ago must not be remembered as missing.
    const provider = await this.#table.get(Provider, providerKey(org, ws, slug), true);
    if (!provider) return undefined;
    const integration = await this.#table.get(Integration, { pk: `ORG#${org}`, sk: `INTEGRATION#${provider.integration_id}` }, true);
    if (!integration) return undefined;
    const base = { allowedModels: integration.allowed_models, expiresAt: provider.expires_at };
    let refusal: string | undefined;
    if (integration.status !== 'active') refusal = `The integration ${integration.slug} of provider @${slug} is archived`;
    else if (integration.workspace_ids !== null && !integration.workspace_ids.includes(ws)) {
      refusal = `The integration ${integration.slug} of provider @${slug} is no longer available to this workspace`;
    }
    if (refusal) return { kind: 'provider', slug, provider: integration.ai_provider_id, options: {}, ...base, refusal };
    const creds = await openCredentials(this.#cipher, integration.secret, integrationContext(org, integration.id));
    const limit = parseUsageLimit(provider.usage_limits);
    const budget = limit ? { budget: { providerId: provider.id, limit } } : {};
    const mapped = integration.secret_mappings?.length ? { secretMappings: integration.secret_mappings } : {};
    return { ...fromCredentials('provider', slug, integration.ai_provider_id, integration.configurations, creds), ...base, ...budget, ...mapped };
  }

  async #loadVirtualKey(org: string, ws: string, slug: string): Promise<ManagedCredential | undefined> {
    const vk = await this.#table.get(VirtualKey, virtualKeyKey(org, ws, slug), true);
    if (!vk) return undefined;
    const creds = await openCredentials(this.#cipher, vk.secret, virtualKeyContext(org, vk.id));
    return { ...fromCredentials('virtual_key', slug, vk.provider, vk.configurations, creds), allowedModels: [], expiresAt: vk.expires_at };
  }
}

// ---- The target caller wrapper -----------------------------------------------------------------

/** What the wrapper needs of the request: its headers, and its parameters (a JSON body, or a form's fields). */
export interface ManagedRequest {
  clientHeaders: Headers;
  params: Readonly<Record<string, unknown>>;
  /** Where the body names its model, for errors (`session.model`); default `model`. */
  modelField?: string;
}

export interface ManagedDeps {
  managedProviders: ManagedProviderSource;
  clock: Clock;
  secrets: Pick<SecretResolver, 'resolve'>;
}

interface Reference {
  kind: ManagedKind;
  slug: string;
  /** The header or config path that named it (for errors). */
  field: string;
  /** `@slug/model` in the model: the model without its prefix, and where it was written. */
  model?: { name: string; field: string };
}

const label = (r: Reference): string => (r.kind === 'provider' ? `provider @${r.slug}` : `virtual key ${r.slug}`);

/** The model a target sends and where it comes from. */
function modelOf(target: ResolvedTarget, request: ManagedRequest): { value: unknown; field: string } {
  if (target.override_params.model !== undefined) return { value: target.override_params.model, field: `${target.path}.override_params.model` };
  return { value: request.params.model, field: request.modelField ?? 'model' };
}

/** `@slug/model`: the slug and the model, or undefined for any other model name. */
function splitModel(model: unknown, field: string): { slug: string; name: string } | undefined {
  if (typeof model !== 'string' || !model.startsWith('@')) return undefined;
  const slash = model.indexOf('/');
  if (slash <= 1 || slash === model.length - 1) throw ValidationError.field(field, 'must be "@provider-slug/model-name" when it starts with @');
  return { slug: model.slice(1, slash), name: model.slice(slash + 1) };
}

function referenceOf(target: ResolvedTarget, request: ManagedRequest): Reference | undefined {
  const headers = request.clientHeaders;
  const model = modelOf(target, request);
  const inModel = splitModel(model.value, model.field);
  let ref: Reference | undefined;
  if (target.provider?.startsWith('@')) {
    const slug = target.provider.slice(1);
    if (!slug) throw ValidationError.field(fieldFor(target, headers, 'provider'), 'must name a provider slug after @');
    ref = { kind: 'provider', slug, field: fieldFor(target, headers, 'provider') };
  } else if (target.virtual_key) {
    ref = { kind: 'virtual_key', slug: target.virtual_key, field: fieldFor(target, headers, 'virtual_key') };
  } else if (inModel && !target.provider) {
    // "@slug/model" names a managed provider only when nothing else names the provider: with a
    // registered provider chosen, "@" is part of that provider's model name (Workers AI's "@cf/...").
    return { kind: 'provider', slug: inModel.slug, field: model.field, model: { name: inModel.name, field: model.field } };
  }
  // A model prefixed with the same provider is stripped; another provider's prefix is left alone.
  if (ref && inModel && ref.kind === 'provider' && inModel.slug === ref.slug) ref.model = { name: inModel.name, field: model.field };
  return ref;
}

/** The request header that set a target's value when it did, else the config path. */
function fieldFor(target: ResolvedTarget, headers: Headers, key: 'provider' | 'virtual_key' | 'custom_host'): string {
  const header = key === 'provider' ? 'x-gw-provider' : key === 'virtual_key' ? 'x-gw-virtual-key' : 'x-gw-custom-host';
  const value = key === 'provider' ? target.provider : key === 'virtual_key' ? target.virtual_key : target.custom_host;
  return headers.get(header) === value ? header : `${target.path}.${key}`;
}

/** Picks the Azure deployment for the model (alias or model slug), else the default one. */
function azureDeployment(options: Record<string, unknown>, model: unknown): Record<string, unknown> {
  const list = options.azure_deployment_config;
  if (!Array.isArray(list) || list.length === 0) return {};
  type Deployment = { alias?: string; azure_model_slug?: string; azure_deployment_name?: string; azure_api_version?: string; is_default?: boolean };
  const deployments = list as Deployment[];
  const chosen =
    deployments.find((d) => typeof model === 'string' && (d.alias === model || d.azure_model_slug === model)) ??
    deployments.find((d) => d.is_default) ??
    deployments[0];
  return {
    ...(chosen?.azure_deployment_name ? { azure_deployment_id: chosen.azure_deployment_name } : {}),
    ...(chosen?.azure_api_version ? { azure_api_version: chosen.azure_api_version } : {}),
    ...(chosen?.azure_model_slug ? { azure_model_name: chosen.azure_model_slug } : {}),
  };
}

/** The client's own key for a target, as call-target would use it. */
const clientKey = (headers: Headers): string | undefined =>
  headers
    .get('authorization')
    ?.match(/^Bearer\s+(.+)$/i)?.[1]
    ?.trim();

/**
 * The semantic cache embeds with the target's key when its embedding names none. A managed key
 * must only go where the managed provider goes: otherwise the embedding gets the key the target
 * had before (or the client's), or, without one, no embedding (a miss, never an error).
 */
function protectEmbedding(target: ResolvedTarget, next: ResolvedTarget, cred: ManagedCredential, headers: Headers): void {
  const embedding = target.cache?.embedding;
  if (!embedding || embedding.api_key !== undefined || !target.cache) return;
  const fallback = target.api_key ?? clientKey(headers);
  if (fallback !== undefined) {
    next.cache = { ...target.cache, embedding: { ...embedding, api_key: fallback } };
    return;
  }
  const sameDestination = embedding.provider === cred.provider && (embedding.custom_host ?? undefined) === cred.customHost;
  if (!sameDestination) {
    const cache = { ...target.cache };
    delete cache.embedding;
    next.cache = cache;
  }
}

/**
 * Wraps a target caller: managed targets are looked up, checked (workspace, expiry, allowed
 * models) and rewritten before `inner` sees them; every other target passes through untouched.
 */
export function withManagedProviders(inner: TargetCaller, deps: ManagedDeps, principal: Principal, request: ManagedRequest): TargetCaller {
  return async (target, signal) => {
    const ref = referenceOf(target, request);
    if (!ref) return inner(target, signal);
    const workspaceId = principal.workspaceId;
    let cred: ManagedCredential | undefined;
    try {
      cred = workspaceId === null ? undefined : await deps.managedProviders.lookup(principal.organisationId, workspaceId, ref.kind, ref.slug);
    } catch (err) {
      if (err instanceof GantryError) throw err;
      // Never echo the cause: it may come from decrypting the credential.
      throw new InternalError(`The stored credential of ${label(ref)} could not be read`, { cause: err });
    }
    if (!cred) {
      const what = ref.kind === 'provider' ? `no provider "@${ref.slug}"` : `no virtual key "${ref.slug}"`;
      throw ValidationError.field(ref.field, `${what} in this workspace`);
    }
    if (cred.refusal) throw new ForbiddenError(cred.refusal, { param: ref.field });
    if (cred.expiresAt !== null && Date.parse(cred.expiresAt) <= deps.clock.now()) {
      throw new ForbiddenError(`The ${label(ref)} expired at ${cred.expiresAt}`, { param: ref.field, openaiCode: 'expired' });
    }
    if (target.custom_host !== undefined && target.custom_host !== cred.customHost) {
      throw ValidationError.field(
        fieldFor(target, request.clientHeaders, 'custom_host'),
        `cannot be combined with the managed ${label(ref)}: its base URL is set by the administrator`,
      );
    }

    const override_params = ref.model ? { ...target.override_params, model: ref.model.name } : target.override_params;
    const model = override_params.model ?? request.params.model;
    if (cred.allowedModels.length > 0 && typeof model === 'string' && !cred.allowedModels.includes(model)) {
      throw new ForbiddenError(`The model "${model}" is not allowed for ${label(ref)}`, { param: ref.model?.field ?? modelOf(target, request).field });
    }

    // Only the administrator's options: a config or header naming another Azure resource, AWS
    // region or project would otherwise send the stored key there.
    const options = { ...cred.options };
    const next: ResolvedTarget = { ...target, provider: cred.provider, override_params, options: { ...options, ...azureDeployment(options, model) } };
    delete next.virtual_key;
    delete next.api_key;
    delete next.custom_host;
    if (cred.apiKey !== undefined) next.api_key = cred.apiKey;
    if (cred.customHost !== undefined) next.custom_host = cred.customHost;
    next.managed = true;
    protectEmbedding(target, next, cred, request.clientHeaders);
    // Reserved by the hooks' admitTarget (withTargetAdmission) once this target is about to be called.
    if (cred.budget) next.budget = { ...cred.budget, slug: cred.slug };
    const attempt = cred.secretMappings ? await callWithSecrets(inner, next, cred.secretMappings, deps, principal, signal) : await inner(next, signal);
    // Report the provider actually called (its id, not the slug) to the record and headers.
    return { ...attempt, target: attempt.target ?? next };
  };
}

/** The target with each mapped field set from its secret reference (`fresh`: asking the manager again). */
async function withSecrets(
  target: ResolvedTarget,
  mappings: readonly SecretMapping[],
  deps: ManagedDeps,
  principal: Principal,
  fresh: boolean,
  signal?: AbortSignal,
): Promise<ResolvedTarget> {
  const next: ResolvedTarget = { ...target, options: { ...target.options } };
  for (const mapping of mappings) {
    const value = await deps.secrets.resolve({ organisationId: principal.organisationId, workspaceId: principal.workspaceId ?? '', mapping, fresh, signal });
    if (mapping.target_field === 'key') next.api_key = value;
    else next.options[mapping.target_field.slice('configurations.'.length)] = value;
  }
  return next;
}

/**
 * Calls a target whose credentials live in secret managers. A 401/403 from the provider may mean
 * the secret was rotated since it was cached: the values are fetched again and the call retried
 * once, so a rotation takes effect on the first request that fails with the old value.
 */
async function callWithSecrets(
  inner: TargetCaller,
  target: ResolvedTarget,
  mappings: readonly SecretMapping[],
  deps: ManagedDeps,
  principal: Principal,
  signal?: AbortSignal,
): Promise<Attempt> {
  const first = await inner(await withSecrets(target, mappings, deps, principal, false, signal), signal);
  if (first.status !== 401 && first.status !== 403) return first;
  first.body?.resume();
  return inner(await withSecrets(target, mappings, deps, principal, true, signal), signal);
}

/**
 * The registry provider behind `@slug` in the caller's workspace, for routes that only need to
 * know which provider a request means (the models list, say); undefined when `value` is not
 * `@slug`. An unknown slug is a 400 naming `field`.
 */
export async function managedProviderId(deps: ManagedDeps, principal: Principal, value: string, field: string): Promise<string | undefined> {
  if (!value.startsWith('@')) return undefined;
  const slug = value.slice(1);
  const cred =
    principal.workspaceId === null || !slug ? undefined : await deps.managedProviders.lookup(principal.organisationId, principal.workspaceId, 'provider', slug);
  if (!cred) throw ValidationError.field(field, `no provider "${value}" in this workspace`);
  return cred.provider;
}
