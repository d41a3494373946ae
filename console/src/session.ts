/** The console session: exchanged once for the key, then carried by the HttpOnly cookie only. */
import { api, ApiError, SESSION_PATH, setCsrf, type Json } from './api.ts';

export interface Session {
  principal: Json;
  scopes: string[];
  csrf_token: string;
  expires_at: string;
}

const PATH = SESSION_PATH;

function accept(s: Session): Session {
  setCsrf(s.csrf_token);
  return s;
}

/** The session the cookie carries, or null when there is none (401). */
export async function currentSession(): Promise<Session | null> {
  try {
    return accept(await api<Session>('GET', PATH));
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return null;
    throw e;
  }
}

/** With an API key, or with an OIDC id_token where the organisation has JWT sign-in configured. */
export async function signIn(credential: { api_key: string } | { id_token: string }): Promise<Session> {
  return accept(await api<Session>('POST', PATH, credential));
}

export async function signOut(): Promise<void> {
  try {
    await api('DELETE', PATH);
  } finally {
    setCsrf(null);
  }
}

export const can = (s: Session, scope: string): boolean => s.scopes.includes(scope);

/** The workspace an organisation key works in unless it picks another; a workspace key's own. */
export function homeWorkspace(s: Session): string | undefined {
  const p = s.principal;
  const ws = p.workspace_id ?? p.workspaceId;
  return typeof ws === 'string' && ws ? ws : undefined;
}
