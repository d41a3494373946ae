/**
 * Users of the organisation, their workspace memberships and invites. Keys: users and invites live
 * in the organisation's partition (`USER#`, `USEREMAIL#` for unique e-mails, `INVITE#`); a
 * membership lives in the organisation's partition under `WSMEMBER#<ws>#<user>` with the user's
 * workspaces on gsi1; an invite's token hash (`INVITETOKEN#`) finds the invite when it is accepted.
 */
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { ConflictError, NotFoundError } from '../http/errors.ts';
import { Entity, type ItemKey } from './entity.ts';
import type { TableClient } from './repositories.ts';
import { prefixRange } from './prefix-range.ts';

export type OrganisationRole = 'owner' | 'admin' | 'member';
export type WorkspaceRole = 'manager' | 'member';

export interface UserRecord {
  id: string;
  organisation_id: string;
  /** Lower-cased. */
  email: string;
  first_name: string | null;
  last_name: string | null;
  role: OrganisationRole;
  created_at: string;
  last_updated_at: string;
}

export interface MemberRecord {
  organisation_id: string;
  workspace_id: string;
  user_id: string;
  role: WorkspaceRole;
  created_at: string;
  last_updated_at: string;
}

export type InviteStatus = 'pending' | 'accepted' | 'expired';

export interface InviteRecord {
  id: string;
  organisation_id: string;
  email: string;
  role: Exclude<OrganisationRole, 'owner'>;
  workspaces: { id: string; role: WorkspaceRole }[];
  workspace_api_key_details: { name?: string; scopes: string[] } | null;
  /** SHA-256 of the invite token; the token itself is only ever in the invite link. */
  token_hash: string;
  /** `accepted` once accepted; `pending` invites past `expires_at` show as `expired`. */
  status: 'pending' | 'accepted';
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  accepted_user_id: string | null;
  invited_by: string | null;
  last_sent_at: string;
}

type TransactItems = NonNullable<TransactWriteCommandInput['TransactItems']>;

export const User = new Entity<UserRecord>({
  name: 'User',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `USER#${r.id}` }),
});

export const UserEmail = new Entity<{ organisation_id: string; email: string; user_id: string }>({
  name: 'UserEmail',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `USEREMAIL#${r.email}` }),
});

export const Member = new Entity<MemberRecord>({
  name: 'WorkspaceMember',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `WSMEMBER#${r.workspace_id}#${r.user_id}` }),
  gsi1: (r) => ({ pk: `USER#${r.user_id}#WORKSPACES`, sk: r.workspace_id }),
});

export const Invite = new Entity<InviteRecord>({
  name: 'Invite',
  key: (r) => ({ pk: `ORG#${r.organisation_id}`, sk: `INVITE#${r.id}` }),
});

/** The invite under its token's hash; removed a day after the invite expires. */
export const InviteToken = new Entity<InviteRecord>({
  name: 'InviteToken',
  key: (r) => ({ pk: `INVITETOKEN#${r.token_hash}`, sk: 'INVITETOKEN' }),
  ttl: (r) => Math.ceil(Date.parse(r.expires_at) / 1000) + 86_400,
});

export const memberKey = (orgId: string, workspaceId: string, userId: string): ItemKey => ({
  pk: `ORG#${orgId}`,
  sk: `WSMEMBER#${workspaceId}#${userId}`,
});

const isCancelled = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'TransactionCanceledException' || err.name === 'ConditionalCheckFailedException');

export class IdentityRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  // Users

  getUser(orgId: string, id: string): Promise<UserRecord | undefined> {
    return this.#t.get(User, { pk: `ORG#${orgId}`, sk: `USER#${id}` }, true);
  }

  async getUserByEmail(orgId: string, email: string): Promise<UserRecord | undefined> {
    const ref = await this.#t.get(UserEmail, { pk: `ORG#${orgId}`, sk: `USEREMAIL#${email.toLowerCase()}` }, true);
    return ref ? this.getUser(orgId, ref.user_id) : undefined;
  }

  async listUsers(orgId: string): Promise<UserRecord[]> {
    const all = await this.#t.queryAll(User, {
      ...prefixRange(`ORG#${orgId}`, 'USER#'),
      ConsistentRead: true,
    });
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /** Items that create a user with a unique e-mail (for a larger transaction). */
  userPuts(user: UserRecord): TransactItems {
    return [
      this.#t.putIfAbsent(User.toItem(user)),
      this.#t.putIfAbsent(UserEmail.toItem({ organisation_id: user.organisation_id, email: user.email, user_id: user.id })),
    ];
  }

  async updateUser(user: UserRecord): Promise<void> {
    try {
      await this.#t.transact([{ Put: { TableName: this.#t.tableName, Item: User.toItem(user), ConditionExpression: 'attribute_exists(pk)' } }]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`User ${user.id} not found`);
      throw err;
    }
  }

  /** Removes the user, the e-mail claim and the given memberships together. */
  async deleteUser(user: UserRecord, memberships: readonly MemberRecord[]): Promise<void> {
    const del = (key: ItemKey, cond?: string) => ({ Delete: { TableName: this.#t.tableName, Key: key, ...(cond ? { ConditionExpression: cond } : {}) } });
    try {
      await this.#t.transact([
        del(User.key(user), 'attribute_exists(pk)'),
        del({ pk: `ORG#${user.organisation_id}`, sk: `USEREMAIL#${user.email}` }),
        ...memberships.map((m) => del(Member.key(m))),
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`User ${user.id} not found`);
      throw err;
    }
  }

  // Memberships

  getMember(orgId: string, workspaceId: string, userId: string): Promise<MemberRecord | undefined> {
    return this.#t.get(Member, memberKey(orgId, workspaceId, userId), true);
  }

  listMembers(orgId: string, workspaceId: string): Promise<MemberRecord[]> {
    return this.#t.queryAll(Member, {
      ...prefixRange(`ORG#${orgId}`, `WSMEMBER#${workspaceId}#`),
      ConsistentRead: true,
    });
  }

  /** The memberships of a user (gsi1: eventually consistent). */
  async membershipsOf(userId: string): Promise<MemberRecord[]> {
    return this.#t.queryAll(Member, {
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': `USER#${userId}#WORKSPACES` },
    });
  }

  memberPut(m: MemberRecord): TransactItems[number] {
    return this.#t.putIfAbsent(Member.toItem(m));
  }

  async addMembers(members: readonly MemberRecord[]): Promise<void> {
    try {
      await this.#t.transact(members.map((m) => this.memberPut(m)));
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError('One of these users is already a member of the workspace');
      throw err;
    }
  }

  async updateMember(m: MemberRecord): Promise<void> {
    try {
      await this.#t.transact([{ Put: { TableName: this.#t.tableName, Item: Member.toItem(m), ConditionExpression: 'attribute_exists(pk)' } }]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`User ${m.user_id} is not a member of workspace ${m.workspace_id}`);
      throw err;
    }
  }

  async removeMember(m: MemberRecord): Promise<void> {
    try {
      await this.#t.transact([{ Delete: { TableName: this.#t.tableName, Key: Member.key(m), ConditionExpression: 'attribute_exists(pk)' } }]);
    } catch (err) {
      if (isCancelled(err)) throw new NotFoundError(`User ${m.user_id} is not a member of workspace ${m.workspace_id}`);
      throw err;
    }
  }

  // Invites

  getInvite(orgId: string, id: string): Promise<InviteRecord | undefined> {
    return this.#t.get(Invite, { pk: `ORG#${orgId}`, sk: `INVITE#${id}` }, true);
  }

  getInviteByTokenHash(hash: string): Promise<InviteRecord | undefined> {
    return this.#t.get(InviteToken, { pk: `INVITETOKEN#${hash}`, sk: 'INVITETOKEN' }, true);
  }

  async listInvites(orgId: string): Promise<InviteRecord[]> {
    const all = await this.#t.queryAll(Invite, {
      ...prefixRange(`ORG#${orgId}`, 'INVITE#'),
      ConsistentRead: true,
    });
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  async createInvite(invite: InviteRecord): Promise<void> {
    try {
      await this.#t.transact([this.#t.putIfAbsent(Invite.toItem(invite)), this.#t.putIfAbsent(InviteToken.toItem(invite))]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError('An invite with this id or token already exists');
      throw err;
    }
  }

  /** A new token (resend): the record changes only if still pending, the old token stops working. */
  async replaceInviteToken(previous: InviteRecord, next: InviteRecord): Promise<void> {
    const t = this.#t.tableName;
    try {
      await this.#t.transact([
        {
          Put: {
            TableName: t,
            Item: Invite.toItem(next),
            ConditionExpression: 'attribute_exists(pk) AND #s = :pending AND token_hash = :h',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':pending': 'pending', ':h': previous.token_hash },
          },
        },
        { Delete: { TableName: t, Key: InviteToken.key(previous) } },
        this.#t.putIfAbsent(InviteToken.toItem(next)),
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`Invite ${previous.id} changed meanwhile or is no longer pending`);
      throw err;
    }
  }

  async deleteInvite(invite: InviteRecord): Promise<void> {
    await this.#t.transact([
      { Delete: { TableName: this.#t.tableName, Key: Invite.key(invite) } },
      { Delete: { TableName: this.#t.tableName, Key: InviteToken.key(invite) } },
    ]);
  }

  /**
   * Accepting: the invite turns `accepted` (only if still pending with this token), and `extra` (the user, memberships, keys) is written in the same transaction.
   */
  async acceptInvite(invite: InviteRecord, accepted: InviteRecord, extra: TransactItems): Promise<void> {
    const t = this.#t.tableName;
    try {
      await this.#t.transact([
        {
          Put: {
            TableName: t,
            Item: Invite.toItem(accepted),
            ConditionExpression: 'attribute_exists(pk) AND #s = :pending AND token_hash = :h',
            ExpressionAttributeNames: { '#s': 'status' },
            ExpressionAttributeValues: { ':pending': 'pending', ':h': invite.token_hash },
          },
        },
        // The token's copy stays (until its TTL) so that reusing the link says it was accepted.
        { Put: { TableName: t, Item: InviteToken.toItem(accepted) } },
        ...extra,
      ]);
    } catch (err) {
      if (isCancelled(err)) throw new ConflictError(`Invite ${invite.id} was already used, or a user with e-mail ${invite.email} exists`);
      throw err;
    }
  }
}
