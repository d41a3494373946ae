/**
 * Invites: an owner or admin invites an e-mail address with an organisation role, workspace roles
 * and optionally a workspace key's scopes. The invite link carries a random token that is stored
 * only as its SHA-256 hash and expires (GW_INVITE_TTL_HOURS). Accepting creates the user, the
 * memberships and the keys in one transaction with the invite's change of state.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { CoreDeps } from '../../deps.ts';
import { ConflictError, ForbiddenError, NotFoundError, ServiceUnavailableError, ValidationError, type FieldProblem } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { ORGANISATION_ONLY_SCOPES, type Scope } from '../../policy/scopes.ts';
import { auditTarget } from '../../store/audit-context.ts';
import type { ApiKeyRecord } from '../../store/entities.ts';
import { IdentityRepository, type InviteRecord, type InviteStatus, type MemberRecord, type UserRecord } from '../../store/identity.ts';
import { newKeyRecord } from '../api-keys/service.ts';
import type { Actor } from '../route.ts';
import type { AcceptInviteBody, CreateInviteBody } from './schema.ts';

const TOKEN_PREFIX = 'gwi_';
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export interface InviteView {
  object: 'invite';
  id: string;
  email: string;
  role: string;
  workspaces: { id: string; role: string }[];
  workspace_api_key_details: { name?: string; scopes: string[] } | null;
  status: InviteStatus;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  invited_by: string | null;
}

export function inviteStatus(i: InviteRecord, nowMs: number): InviteStatus {
  if (i.status === 'accepted') return 'accepted';
  return Date.parse(i.expires_at) <= nowMs ? 'expired' : 'pending';
}

export const inviteView = (i: InviteRecord, nowMs: number): InviteView => ({
  object: 'invite',
  id: i.id,
  email: i.email,
  role: i.role,
  workspaces: i.workspaces,
  workspace_api_key_details: i.workspace_api_key_details,
  status: inviteStatus(i, nowMs),
  created_at: i.created_at,
  expires_at: i.expires_at,
  accepted_at: i.accepted_at,
  invited_by: i.invited_by,
});

export interface AcceptedInvite {
  object: 'user';
  id: string;
  email: string;
  role: string;
  workspaces: { id: string; role: string }[];
  /** Keys made for the new user, shown only here. */
  api_keys: { id: string; key: string; workspace_id: string }[];
}

export class InviteService {
  readonly #deps: CoreDeps;
  readonly #identity: IdentityRepository;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
    this.#identity = new IdentityRepository(deps.repos.table);
  }

  #now(): number {
    return this.#deps.clock.now();
  }

  /** Never from the request's Host header: whoever sends the request would choose where the link points. */
  #link(token: string): string {
    const base = this.#deps.config.publicUrl;
    if (!base) throw new ServiceUnavailableError('Invites need the public URL of this service: set GW_PUBLIC_URL (e.g. https://gantry.example.com)');
    return `${base.replace(/\/+$/, '')}/v1/admin/users/invites/accept?token=${token}`;
  }

  #newToken(): { token: string; hash: string } {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    return { token, hash: hashToken(token) };
  }

  async #mail(invite: InviteRecord, link: string): Promise<void> {
    const org = await this.#deps.repos.organisations.get(invite.organisation_id);
    const workspaces = invite.workspaces.length ? ` and to ${invite.workspaces.length} workspace(s)` : '';
    await this.#deps.mailer.send({
      to: [invite.email],
      kind: 'invite',
      subject: `You are invited to ${org?.name ?? 'an organisation'} on Gantry`,
      text:
        `You are invited to join ${org?.name ?? 'an organisation'} as ${invite.role}${workspaces}.\n\n` +
        `Accept the invite before ${invite.expires_at} by sending its token to the accept endpoint:\n\n  ${link}\n\n` +
        `(POST {"token": "..."} to that URL.) If you did not expect this invite, ignore it.`,
    });
  }

  async create(caller: Principal, body: CreateInviteBody): Promise<{ id: string; invite_link: string; object: 'invite' }> {
    const { token, hash } = this.#newToken();
    // Refused before anything is stored.
    const link = this.#link(token);
    const email = body.email.toLowerCase();
    const problems: FieldProblem[] = [];
    const workspaces: { id: string; role: MemberRecord['role'] }[] = [];
    for (const [i, w] of body.workspaces.entries()) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, w.id);
      if (!ws) throw new NotFoundError(`Workspace ${w.id} not found`, { param: `workspaces[${i}].id` });
      if (ws.status === 'archived') problems.push({ path: `workspaces[${i}].id`, message: `workspace ${ws.slug} is archived` });
      if (workspaces.some((x) => x.id === ws.id)) problems.push({ path: `workspaces[${i}].id`, message: 'is listed twice' });
      workspaces.push({ id: ws.id, role: w.role });
    }
    const details = body.workspace_api_key_details ?? null;
    details?.scopes.forEach((s, i) => {
      if (ORGANISATION_ONLY_SCOPES.has(s as Scope)) {
        problems.push({ path: `workspace_api_key_details.scopes[${i}]`, message: `${s} is an organisation scope and cannot be given to a workspace key` });
      }
    });
    if (details && workspaces.length === 0) problems.push({ path: 'workspace_api_key_details', message: 'needs at least one workspace' });
    if (problems.length) throw new ValidationError(problems);
    if (details && !caller.owner) {
      const missing = details.scopes.filter((s) => !caller.scopes.has(s));
      if (missing.length) throw new ForbiddenError(`Cannot grant scopes the caller does not hold: ${missing.join(', ')}`);
    }
    if (await this.#identity.getUserByEmail(caller.organisationId, email)) throw new ConflictError(`A user with e-mail ${email} already exists`);
    const open = (await this.#identity.listInvites(caller.organisationId)).find((i) => i.email === email && inviteStatus(i, this.#now()) === 'pending');
    if (open) throw new ConflictError(`A pending invite (${open.id}) for ${email} exists: resend it instead`);

    const now = this.#now();
    const invite: InviteRecord = {
      id: randomUUID(),
      organisation_id: caller.organisationId,
      email,
      role: body.role,
      workspaces,
      workspace_api_key_details: details ? { ...(details.name ? { name: details.name } : {}), scopes: [...new Set(details.scopes)] } : null,
      token_hash: hash,
      status: 'pending',
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + this.#deps.config.inviteTtlMs).toISOString(),
      accepted_at: null,
      accepted_user_id: null,
      invited_by: caller.userId ?? caller.keyId,
      last_sent_at: new Date(now).toISOString(),
    };
    auditTarget(invite.id, null);
    await this.#identity.createInvite(invite);
    await this.#mail(invite, link);
    return { id: invite.id, invite_link: link, object: 'invite' };
  }

  async list(caller: Principal, query: URLSearchParams): Promise<InviteView[]> {
    const status = query.get('status');
    if (status !== null && !['pending', 'accepted', 'expired'].includes(status)) throw ValidationError.field('status', 'must be pending, accepted or expired');
    const role = query.get('role');
    if (role !== null && role !== 'admin' && role !== 'member') throw ValidationError.field('role', 'must be admin or member');
    const email = query.get('email')?.toLowerCase();
    const now = this.#now();
    return (await this.#identity.listInvites(caller.organisationId))
      .map((i) => inviteView(i, now))
      .filter((v) => (status === null || v.status === status) && (role === null || v.role === role) && (email === undefined || v.email.includes(email)));
  }

  async #invite(caller: Principal, id: string): Promise<InviteRecord> {
    const invite = await this.#identity.getInvite(caller.organisationId, id);
    if (!invite) throw new NotFoundError(`Invite ${id} not found`);
    auditTarget(invite.id, null);
    return invite;
  }

  async get(caller: Principal, id: string): Promise<InviteView> {
    return inviteView(await this.#invite(caller, id), this.#now());
  }

  async delete(caller: Principal, id: string): Promise<void> {
    await this.#identity.deleteInvite(await this.#invite(caller, id));
  }

  /** A new link (the old one stops working) and a new expiry; pending or expired invites only. */
  async resend(caller: Principal, id: string): Promise<{ invite_link: string }> {
    const invite = await this.#invite(caller, id);
    if (invite.status === 'accepted') throw new ConflictError(`Invite ${id} was already accepted`);
    const now = this.#now();
    const { token, hash } = this.#newToken();
    const link = this.#link(token);
    const next: InviteRecord = {
      ...invite,
      token_hash: hash,
      expires_at: new Date(now + this.#deps.config.inviteTtlMs).toISOString(),
      last_sent_at: new Date(now).toISOString(),
    };
    await this.#identity.replaceInviteToken(invite, next);
    await this.#mail(next, link);
    return { invite_link: link };
  }

  /** The invitee accepts with the token of the link; answers the new user and their keys. */
  async accept(body: AcceptInviteBody, actor: (a: Actor) => void): Promise<AcceptedInvite> {
    if (!body.token.startsWith(TOKEN_PREFIX)) throw ValidationError.field('token', 'is not an invite token');
    const invite = await this.#identity.getInviteByTokenHash(hashToken(body.token));
    // The token's copy can outlive a deleted invite until DynamoDB's TTL runs: check the invite itself.
    const current = invite && (await this.#identity.getInvite(invite.organisation_id, invite.id));
    if (!current || current.token_hash !== invite?.token_hash) throw new NotFoundError('No invite with this token: it was deleted, resent or never existed');
    const now = this.#now();
    const status = inviteStatus(current, now);
    if (status === 'accepted') throw new ConflictError('This invite was already accepted');
    if (status === 'expired') throw new ConflictError(`This invite expired at ${current.expires_at}: ask for it to be sent again`);

    const userId = randomUUID();
    actor({ organisationId: current.organisation_id, userId, email: current.email, workspaceId: current.workspaces[0]?.id ?? null });
    auditTarget(current.id, null);
    const at = new Date(now).toISOString();
    const user: UserRecord = {
      id: userId,
      organisation_id: current.organisation_id,
      email: current.email,
      first_name: body.first_name ?? null,
      last_name: body.last_name ?? null,
      role: current.role,
      created_at: at,
      last_updated_at: at,
    };
    const items = [...this.#identity.userPuts(user)];
    const workspaces: AcceptedInvite['workspaces'] = [];
    const keys: AcceptedInvite['api_keys'] = [];
    const newKeys: ApiKeyRecord[] = [];
    for (const w of current.workspaces) {
      const ws = await this.#deps.repos.workspaces.getById(current.organisation_id, w.id);
      // A workspace deleted or archived since the invite was sent is skipped.
      if (!ws || ws.status !== 'active') continue;
      items.push(
        this.#identity.memberPut({
          organisation_id: ws.organisation_id,
          workspace_id: ws.id,
          user_id: userId,
          role: w.role,
          created_at: at,
          last_updated_at: at,
        }),
      );
      workspaces.push({ id: ws.id, role: w.role });
      const details = current.workspace_api_key_details;
      if (details) {
        const made = newKeyRecord(
          {
            organisation_id: ws.organisation_id,
            workspace_id: ws.id,
            user_id: userId,
            type: 'workspace-user',
            name: details.name ?? `${current.email} (${ws.slug})`,
            description: 'Created when the invite was accepted',
            scopes: details.scopes,
            expires_at: null,
            owner: false,
            created_by: current.invited_by,
          },
          now,
        );
        items.push(...this.#deps.repos.apiKeys.createItems(made.record));
        newKeys.push(made.record);
        keys.push({ id: made.record.id, key: made.key, workspace_id: ws.id });
      }
    }
    await this.#deps.repos.apiKeys.indexAhead(newKeys);
    await this.#identity.acceptInvite(current, { ...current, status: 'accepted', accepted_at: at, accepted_user_id: userId }, items);
    return { object: 'user', id: userId, email: user.email, role: user.role, workspaces, api_keys: keys };
  }
}
