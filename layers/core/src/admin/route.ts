/**
 * The one mechanism every admin route goes through: the feature flags, authentication (API key or
 * JWT), authorization (the route's scope, the caller's role, the security settings), the body, the
 * audit entry of every mutating call, and errors in the admin shape. A route cannot be declared
 * without a scope, so none can forget authorization; none can forget its audit entry either.
 *
 * Audit: by default an entry is written ahead of the change (outcome `pending`) and completed with
 * the response status afterwards, so no change goes unrecorded even if the process dies midway.
 * Routes whose change is one transaction declare `audit.transactional`: their repositories add the
 * entry to that transaction (store/audit-context.ts), so change and entry commit together.
 */
import { randomUUID } from 'node:crypto';
import type { Context, Hono } from 'hono';
import type * as z from 'zod';
import type { FeatureFlags } from '../config.ts';
import type { CoreDeps } from '../deps.ts';
import { asGantryError, ForbiddenError, ValidationError, type GantryError } from '../http/errors.ts';
import { toResponse } from '../http/error-response.ts';
import { isRecord, jsonResponse, tryParseJson } from '../http/json.ts';
import { readBodyText, type RuntimeBindings } from '../http/bodies.ts';
import { PARSE_CONTEXT, problemsFromZod } from '../gateway/validate/common.ts';
import type { Principal, Role } from '../kernel/principal.ts';
import { authorize } from '../policy/rbac.ts';
import type { Scope } from '../policy/scopes.ts';
import { securitySetting, type SecuritySettingName } from '../policy/security-settings.ts';
import { AuditRepository, type AuditRecord } from '../store/audit.ts';
import { runWithAudit, type PendingAudit } from '../store/audit-context.ts';
import { auditBody, auditQuery } from './audit-logs/mask.ts';
import { adminPrincipal } from './console/session.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type FeatureName = keyof FeatureFlags;

/** The environment variable behind each feature flag (docs/design/spec.md#feature-flags-and-retention), named in the 403 of a disabled feature. */
export const FEATURE_FLAGS: Readonly<Record<FeatureName, string>> = {
  guardrails: 'GUARDRAILS_ENABLED',
  apiAccess: 'API_ACCESS_ENABLED',
  dataExports: 'DATA_EXPORTS_ENABLED',
  usageLimits: 'USAGE_LIMITS_ENABLED',
  auditLogs: 'AUDIT_LOGS_ENABLED',
  scim: 'SCIM_ENABLED',
  policy: 'POLICY_ENABLED',
};

/** 403 AB03 naming the flag that turned a feature off. */
export function featureDisabled(feature: FeatureName, what: string): ForbiddenError {
  return new ForbiddenError(`${what} is disabled on this deployment (${FEATURE_FLAGS[feature]}=OFF)`);
}

export interface AdminContext {
  principal: Principal;
  params: Record<string, string>;
  query: URLSearchParams;
  deps: CoreDeps;
  request: Request;
  /** The id of this request, also in the `x-gw-request-id` response header and the audit entry. */
  requestId: string;
  /** The JSON body (AB01 when it is not valid JSON). */
  body(): Promise<unknown>;
  /** Whether a security setting allows something for the caller (always true for owners and admins). */
  setting(name: SecuritySettingName): Promise<boolean>;
}

export interface AdminRoute {
  method: HttpMethod;
  /** Hono path, e.g. `/v1/api-keys/:id`. */
  path: string;
  scope: Scope;
  handler: (ctx: AdminContext) => Promise<unknown>;
  /** The body's schema (set by `withBody`, admin/body.ts): validates it and documents it in the OpenAPI document. */
  body?: z.ZodType;
  /** A body the route accepts, shown in the OpenAPI document (a test parses it with `body`). */
  example?: unknown;
  /** Only these roles may call the route, whatever scopes they hold (e.g. organisation keys). */
  roles?: readonly Role[];
  /** Feature flags that must be on (checked in order); one off answers 403 naming it. */
  feature?: FeatureName | readonly FeatureName[];
  audit?: {
    /** The handler's change is one transaction that carries the audit entry. */
    transactional?: boolean;
    /** Defaults: the scope's resource and action (`api_keys.rotate` -> `api_keys`, `rotate`). */
    resourceType?: string;
    action?: string;
  };
}

/** Who acted on a route that authenticates by its own means (an invite token). */
export interface Actor {
  organisationId: string;
  userId: string | null;
  email: string | null;
  workspaceId: string | null;
}

export interface PublicContext {
  params: Record<string, string>;
  query: URLSearchParams;
  deps: CoreDeps;
  request: Request;
  requestId: string;
  body(): Promise<unknown>;
  /** Names who acts, for the audit entry; call it before writing. */
  actor(actor: Actor): void;
  /** Names an authenticated principal as who acts (a console sign-in), for the audit entry. */
  actAs(principal: Principal): void;
}

/**
 * A route without an API key or JWT: it carries its own credential (an invite token) and checks it
 * itself. Kept in a list of their own (`PUBLIC_ADMIN_ROUTES`) that a test pins down.
 */
export interface PublicAdminRoute {
  method: HttpMethod;
  path: string;
  handler: (ctx: PublicContext) => Promise<unknown>;
  audit: { resourceType: string; action: string };
}

/** Validates `value` with a zod schema, turning every issue into an AB01 problem. */
export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value, PARSE_CONTEXT);
  if (!result.success) throw new ValidationError(problemsFromZod(result.error.issues, value));
  return result.data;
}

const resourceOfScope = (scope: string) => scope.slice(0, scope.lastIndexOf('.'));
const actionOfScope = (scope: string) => scope.slice(scope.lastIndexOf('.') + 1);

interface RequestFacts {
  requestId: string;
  method: string;
  path: string;
  query: URLSearchParams;
  clientIp: string | null;
  forwardedFor: string | null;
  userAgent: string | null;
}

function requestFacts(c: Context): RequestFacts {
  const url = new URL(c.req.url);
  const forwardedFor = c.req.header('x-forwarded-for') ?? null;
  // The peer the runtime saw (local server), else the hop API Gateway appended last to
  // X-Forwarded-For; earlier entries are whatever the client claimed (kept in forwarded_for).
  const lastHop =
    forwardedFor
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean)
      .at(-1) ?? null;
  const env = c.env as RuntimeBindings | undefined;
  return {
    requestId: randomUUID(),
    method: c.req.method,
    path: url.pathname,
    query: url.searchParams,
    clientIp: env?.clientIp ?? lastHop,
    forwardedFor,
    userAgent: c.req.header('user-agent') ?? null,
  };
}

function bodyReader(text: Promise<string>): () => Promise<unknown> {
  return async () => {
    const t = await text;
    if (t.trim() === '') return {};
    const parsed = tryParseJson(t);
    if (!parsed.ok) throw ValidationError.field('body', 'must be valid JSON');
    return parsed.value;
  };
}

/** The workspace an entry concerns: the caller's, or the one the request names. */
function workspaceNamed(params: Record<string, string>, query: URLSearchParams, bodyText: string): string | null {
  if (params.workspaceId) return params.workspaceId;
  const q = query.get('workspace_id');
  if (q) return q;
  const parsed = tryParseJson(bodyText);
  if (parsed.ok && isRecord(parsed.value) && typeof parsed.value.workspace_id === 'string') return parsed.value.workspace_id;
  return null;
}

function draftEntry(
  facts: RequestFacts,
  bodyText: string,
  who: { organisationId: string; principal?: Principal; actor?: Actor },
  names: { resourceType: string; action: string; resourceId: string | null; workspaceId: string | null },
): AuditRecord {
  const p = who.principal;
  return {
    id: randomUUID(),
    organisation_id: who.organisationId,
    timestamp: new Date().toISOString(),
    method: facts.method,
    uri: facts.path,
    query_params: auditQuery(facts.query),
    request_id: facts.requestId,
    request_body: auditBody(bodyText),
    user_id: p ? p.userId : (who.actor?.userId ?? null),
    user_type: p ? (p.kind === 'jwt' || (p.userId && p.keyType === 'workspace-user') ? 'user' : 'api_key') : who.actor ? 'user' : 'anonymous',
    api_key_id: p?.kind === 'api-key' ? p.keyId : null,
    email: p ? p.email : (who.actor?.email ?? null),
    role: p?.role ?? null,
    workspace_id: p?.workspaceId ?? names.workspaceId,
    resource_type: names.resourceType,
    resource_id: names.resourceId,
    action: names.action,
    response_status_code: null,
    outcome: 'pending',
    client_ip: facts.clientIp,
    forwarded_for: facts.forwardedFor,
    user_agent: facts.userAgent,
  };
}

/** The timestamp comes from the service clock (tests move it). */
const stamped = (r: AuditRecord, nowMs: number): AuditRecord => ({ ...r, timestamp: new Date(nowMs).toISOString() });

const createdId = (result: unknown): string | null =>
  result !== null && typeof result === 'object' && typeof (result as { id?: unknown }).id === 'string' ? (result as { id: string }).id : null;

/** Completes the audit of one request whatever happened; a failure to record a success is logged. */
async function settleAudit(audits: AuditRepository, pending: PendingAudit, writtenAhead: boolean, status: number, result: unknown): Promise<void> {
  const record = pending.record;
  if (!record) return;
  const resourceId = record.resource_id ?? createdId(result);
  if (writtenAhead || (pending.committed && status !== 200)) {
    await audits.finish(record, status, resourceId);
  } else if (!pending.committed) {
    await audits.put({ ...record, resource_id: resourceId, response_status_code: status, outcome: status < 400 ? 'success' : 'failure' });
  }
}

/** Ids and slugs are short: a longer path parameter is refused naming it (DynamoDB keys hold 1 KB at most). */
const MAX_PARAM_LENGTH = 256;
/** Admin bodies are small JSON documents: refused past this from their Content-Length or while read. */
const MAX_ADMIN_BODY = 1 << 20;

function checkedParams(c: Context): Record<string, string> {
  const params = c.req.param() as Record<string, string>;
  for (const [name, value] of Object.entries(params)) {
    if (value.length > MAX_PARAM_LENGTH) throw ValidationError.field(name, `must be at most ${MAX_PARAM_LENGTH} characters`);
  }
  return params;
}

/** The body's text (none for GET), capped; a failure surfaces where it is awaited, never unhandled. */
function readAdminBody(method: string, request: Request): Promise<string> {
  if (method === 'GET') return Promise.resolve('');
  const text = readBodyText(request, MAX_ADMIN_BODY);
  text.catch(() => undefined);
  return text;
}

/** What one audited request has done so far: its entry (once drafted) and whether it was written ahead. */
interface AuditState {
  pending: PendingAudit;
  writtenAhead: boolean;
}

/** The parts of a request every audited route reads; the body is read only when asked for. */
interface Incoming {
  facts: RequestFacts;
  request: Request;
  /** The path parameters; a 400 for one that is too long. */
  params(): Record<string, string>;
  text(): Promise<string>;
}

/**
 * Serves one admin request: the API_ACCESS_ENABLED check, `work` (which authenticates, drafts the
 * audit entry and runs the handler), the audit entry's completion, errors in the admin shape and
 * the `x-gw-request-id` header. Both kinds of route (keyed and public) go through it.
 */
async function serveAudited(
  c: Context,
  deps: CoreDeps,
  audits: AuditRepository,
  work: (incoming: Incoming, audit: AuditState) => Promise<unknown>,
): Promise<Response> {
  const facts = requestFacts(c);
  const request = c.req.raw;
  let bodyText: Promise<string> | undefined;
  const text = () => (bodyText ??= readAdminBody(c.req.method, request));
  const audit: AuditState = { pending: { record: undefined, committed: false }, writtenAhead: false };
  let status = 200;
  let result: unknown;
  let error: GantryError | undefined;
  try {
    if (!deps.config.features.apiAccess) {
      throw new ForbiddenError('The admin API is disabled on this deployment (API_ACCESS_ENABLED=OFF)');
    }
    result = await work({ facts, request, params: () => checkedParams(c), text }, audit);
    // A route that sets its own status or headers (a console session's cookie) answers a Response.
    if (result instanceof Response) status = result.status;
  } catch (err) {
    error = asGantryError(err);
    status = error.status;
    if (error.status >= 500) deps.logger.error('admin route failed', { path: c.req.routePath, error: err });
  }
  if (audit.pending.record) {
    try {
      await settleAudit(audits, audit.pending, audit.writtenAhead, status, result);
    } catch (auditErr) {
      deps.logger.error('audit entry could not be completed', { path: c.req.routePath, requestId: facts.requestId, error: auditErr });
    }
  }
  const res = error ? toResponse(error, 'admin') : result instanceof Response ? result : jsonResponse(result ?? {});
  res.headers.set('x-gw-request-id', facts.requestId);
  return res;
}

const lastParam = (params: Record<string, string>): string | null => Object.values(params).at(-1) ?? null;

/** The checks of a keyed route before its handler runs (flags, key, entry, scope), then the handler. */
async function runAdminRoute(
  deps: CoreDeps,
  audits: AuditRepository,
  route: AdminRoute,
  names: { resourceType: string; action: string },
  incoming: Incoming,
  audit: AuditState,
): Promise<unknown> {
  const { facts } = incoming;
  const off = [route.feature ?? []].flat().find((f) => !deps.config.features[f]);
  if (off) throw featureDisabled(off, `The ${names.resourceType.replace(/_/g, ' ')} feature`);
  const principal = await adminPrincipal(deps, incoming.request);
  const params = incoming.params();
  const text = incoming.text();
  const auditing = route.method !== 'GET' && deps.config.features.auditLogs;
  if (auditing) {
    const bodyText = await text;
    const workspaceId = workspaceNamed(params, facts.query, bodyText);
    const draft = draftEntry(
      facts,
      bodyText,
      { organisationId: principal.organisationId, principal },
      { ...names, resourceId: lastParam(params), workspaceId },
    );
    audit.pending.record = stamped(draft, deps.clock.now());
  }
  const setting = (name: SecuritySettingName) => securitySetting(deps, principal, name);
  await authorize(principal, route.scope, { roles: route.roles, setting });
  if (audit.pending.record && !route.audit?.transactional) {
    await audits.put(audit.pending.record);
    audit.writtenAhead = true;
  }
  const ctx: AdminContext = {
    principal,
    params,
    query: facts.query,
    deps,
    request: incoming.request,
    requestId: facts.requestId,
    body: bodyReader(text),
    setting,
  };
  const run = () => route.handler(ctx);
  return auditing && route.audit?.transactional ? runWithAudit(audit.pending, run) : run();
}

export function mountAdminRoutes(app: Hono, deps: CoreDeps, routes: readonly AdminRoute[]): void {
  const audits = new AuditRepository(deps.repos.table);
  for (const route of routes) {
    const names = { resourceType: route.audit?.resourceType ?? resourceOfScope(route.scope), action: route.audit?.action ?? actionOfScope(route.scope) };
    app.on(route.method, route.path, (c) => serveAudited(c, deps, audits, (incoming, audit) => runAdminRoute(deps, audits, route, names, incoming, audit)));
  }
}

/** Mounts routes that check their own credential; audited like every other mutating route. */
export function mountPublicAdminRoutes(app: Hono, deps: CoreDeps, routes: readonly PublicAdminRoute[]): void {
  const audits = new AuditRepository(deps.repos.table);
  for (const route of routes) {
    app.on(route.method, route.path, (c) =>
      serveAudited(c, deps, audits, async ({ facts, request, params: checked, text }, audit) => {
        const auditing = route.method !== 'GET' && deps.config.features.auditLogs;
        const params = checked();
        const bodyText = await text();
        const draft = (who: { organisationId: string; principal?: Principal; actor?: Actor }, workspaceId: string | null) => {
          if (auditing)
            audit.pending.record = stamped(draftEntry(facts, bodyText, who, { ...route.audit, resourceId: lastParam(params), workspaceId }), deps.clock.now());
        };
        const ctx: PublicContext = {
          params,
          query: facts.query,
          deps,
          request,
          requestId: facts.requestId,
          body: bodyReader(text()),
          actor: (actor) => draft({ organisationId: actor.organisationId, actor }, actor.workspaceId),
          actAs: (principal) => draft({ organisationId: principal.organisationId, principal }, principal.workspaceId),
        };
        return runWithAudit(audit.pending, () => route.handler(ctx));
      }),
    );
  }
}
