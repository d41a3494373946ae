/**
 * What integrations, providers and virtual keys share: slugs, masking and naming the caller's
 * workspace. Sealing credentials is in credentials.ts.
 */
import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';

export const SLUG_PATTERN = /^[a-zA-Z0-9_-]+$/;

export const slugSchema = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(255, 'must be at most 255 characters')
  .regex(SLUG_PATTERN, 'may only contain letters, digits, "_" and "-"');

export const nameSchema = z.string({ error: 'is required and must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters');

export const noteSchema = z.string({ error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish();

export const expiresAtSchema = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time' }).nullish();

/** The credential: any printable string a provider issues. */
export const keySchema = z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(16_384, 'must be at most 16384 characters');

/** A slug derived from a name: lower case, runs of other characters as "-". */
export function slugFrom(name: string, fallback: string): string {
  const base = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 48);
  return base || fallback;
}

export const withSuffix = (slug: string): string => `${slug.slice(0, 240)}-${randomBytes(3).toString('hex')}`;

/**
 * Creates with `slug`; when the slug was generated (not chosen by the caller) and is taken, tries
 * again with a random suffix. A chosen slug that is taken stays a conflict.
 */
export async function createWithSlug<T>(slug: string, generated: boolean, create: (slug: string) => Promise<T>): Promise<T> {
  let candidate = slug;
  for (let attempt = 0; ; attempt++) {
    try {
      return await create(candidate);
    } catch (err) {
      if (!generated || attempt >= 3 || !(err instanceof ConflictError) || err.param !== 'slug') throw err;
      candidate = withSuffix(slug);
    }
  }
}

/** Enough to recognise a credential, never enough to use it. */
export function maskSecret(value: unknown): string {
  if (typeof value !== 'string' || value.length < 16) return '****';
  return `${value.slice(0, 4)}****${value.slice(-4)}`;
}

export function maskAll(secretConfig: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(secretConfig).map(([k, v]) => [k, maskSecret(v)]));
}

/**
 * The workspace a workspace-level resource belongs to: the one named (id or slug), else the
 * calling workspace key's own. Workspace keys may only name their own.
 */
export async function workspaceFor(deps: CoreDeps, caller: Principal, requested: string | null | undefined, what: string): Promise<string> {
  if (requested === undefined || requested === null) {
    if (caller.workspaceId) return caller.workspaceId;
    throw ValidationError.field('workspace_id', 'is required when the caller is an organisation key');
  }
  const ws = await deps.repos.workspaces.resolve(caller.organisationId, requested);
  if (!ws) throw new NotFoundError(`Workspace ${requested} not found`, { param: 'workspace_id' });
  if (!isOrganisationPrincipal(caller) && caller.workspaceId !== ws.id) {
    throw new ForbiddenError(`Workspace keys may only manage ${what} of their own workspace`);
  }
  return ws.id;
}

/** The workspace a list is limited to: named, or the workspace key's own; undefined: all of the organisation. */
export async function listWorkspace(deps: CoreDeps, caller: Principal, requested: string | null, what: string): Promise<string | undefined> {
  if (requested === null && isOrganisationPrincipal(caller)) return undefined;
  return workspaceFor(deps, caller, requested, what);
}

export function isPast(iso: string | null, nowMs: number): boolean {
  return iso !== null && Date.parse(iso) <= nowMs;
}

/** A repository of workspace-scoped records named by slug (providers, virtual keys). */
export interface WorkspaceSlugRepository<R extends { id: string; slug: string; workspace_id: string }> {
  get(orgId: string, workspaceId: string, slug: string, consistent?: boolean): Promise<R | undefined>;
  list(orgId: string, workspaceId?: string): Promise<R[]>;
}

/**
 * A record by slug or id: in the named workspace (`workspace_id`), the calling workspace key's own,
 * or, for organisation keys, wherever it is unambiguous (else 400 asking for `workspace_id`). 404
 * when the caller cannot see it. `what` names the resource in messages ("provider").
 */
export async function findInWorkspace<R extends { id: string; slug: string; workspace_id: string }>(
  deps: CoreDeps,
  repo: WorkspaceSlugRepository<R>,
  caller: Principal,
  slugOrId: string,
  workspace: string | null,
  what: { one: string; many: string },
): Promise<R> {
  const workspaceId = await listWorkspace(deps, caller, workspace, what.many);
  let found: R | undefined;
  if (workspaceId !== undefined) {
    found =
      (await repo.get(caller.organisationId, workspaceId, slugOrId, true)) ??
      (await repo.list(caller.organisationId, workspaceId)).find((r) => r.id === slugOrId);
  } else {
    const matches = (await repo.list(caller.organisationId)).filter((r) => r.id === slugOrId || r.slug === slugOrId);
    if (matches.length > 1 && !matches.some((r) => r.id === slugOrId)) {
      throw ValidationError.field('workspace_id', `is required: ${matches.length} workspaces have a ${what.one} "${slugOrId}"`);
    }
    found = matches.find((r) => r.id === slugOrId) ?? matches[0];
  }
  if (!found || (!isOrganisationPrincipal(caller) && found.workspace_id !== caller.workspaceId)) {
    throw new NotFoundError(`${what.one[0]?.toUpperCase()}${what.one.slice(1)} ${slugOrId} not found`);
  }
  return found;
}
