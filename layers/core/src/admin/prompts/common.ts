/** What the prompt resources (prompts, partials, collections, labels) share: owners, visibility, names. */
import * as z from 'zod';
import type { CoreDeps } from '../../deps.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { isOrganisationPrincipal, type Principal } from '../../kernel/principal.ts';
import { visibleWorkspace } from '../workspaces/access.ts';

export const nameSchema = z.string({ error: 'must be a string' }).trim().min(1, 'must not be empty').max(255, 'must be at most 255 characters');

/** The workspace a new resource belongs to: the one named, else the caller's own; 404 for one it may not see. */
export async function workspaceFor(deps: CoreDeps, caller: Principal, requested: string | undefined): Promise<string> {
  if (requested === undefined) {
    if (caller.workspaceId) return caller.workspaceId;
    throw ValidationError.field('workspace_id', 'is required when the caller is an organisation key');
  }
  return (await visibleWorkspace(deps, caller, requested, 'workspace_id')).id;
}

/** Whether the caller sees a resource of this workspace (null: the organisation's). */
export const sees = (caller: Principal, workspaceId: string | null): boolean =>
  isOrganisationPrincipal(caller) || workspaceId === null || workspaceId === caller.workspaceId;

/** The record when the caller may see it; 404 naming what was asked for otherwise. */
export function visibleOr404<R extends { workspace_id: string | null }>(rec: R | undefined, caller: Principal, what: string, param?: string): R {
  if (!rec || !sees(caller, rec.workspace_id)) throw new NotFoundError(param ? `${param}: ${what} not found` : `${what} not found`, param ? { param } : {});
  return rec;
}

/** The workspace filter of a list (`workspace_id`): its id, or undefined for no filter; null when it names none. */
export async function workspaceFilter(deps: CoreDeps, caller: Principal, requested: string | null): Promise<string | null | undefined> {
  if (requested === null) return undefined;
  const ws = await deps.repos.workspaces.resolve(caller.organisationId, requested);
  return ws && sees(caller, ws.id) ? ws.id : null;
}

/** Case-insensitive name search (`search`). */
export const matches = (search: string | null, name: string): boolean => !search || name.toLowerCase().includes(search.toLowerCase());

export const isoNow = (deps: CoreDeps): string => new Date(deps.clock.now()).toISOString();

export const actorOf = (caller: Principal): string => caller.userId ?? caller.keyId;
