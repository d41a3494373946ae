/**
 * Console sessions: what a browser's `gw_console` cookie stands for. The item is keyed by the hash
 * of the cookie's value, so a read of the table cannot be replayed as a cookie; DynamoDB's TTL
 * removes it once it has expired (the service checks `expires_at` itself, as TTL deletes late).
 */
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { Entity } from './entity.ts';
import type { ApiKeyType } from './entities.ts';
import type { TableClient } from './repositories.ts';

/** Who a JWT sign-in acted as: kept whole, since no key record stands behind it. */
export interface JwtSessionIdentity {
  user_id: string;
  email: string | null;
  role: 'owner' | 'admin' | 'manager' | 'member';
  workspace_id: string | null;
  key_type: ApiKeyType;
  scopes: string[];
}

export interface ConsoleSessionRecord {
  /** sha256 of the cookie's value. */
  id_hash: string;
  organisation_id: string;
  kind: 'api-key' | 'jwt';
  /** The key's id, or `jwt:<sub>`. */
  principal_id: string;
  /** How the console names the principal: the key's name, or the user's e-mail. */
  name: string | null;
  /** The signing-in key's hash (never the key): every request re-checks that key. */
  key_hash: string | null;
  jwt: JwtSessionIdentity | null;
  created_at: string;
  expires_at: string;
}

export const ConsoleSession = new Entity<ConsoleSessionRecord>({
  name: 'ConsoleSession',
  key: (r) => consoleSessionKey(r.id_hash),
  ttl: (r) => Math.ceil(Date.parse(r.expires_at) / 1000),
});

export const consoleSessionKey = (idHash: string) => ({ pk: `CONSOLE_SESSION#${idHash}`, sk: 'SESSION' });

export class ConsoleSessionRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async put(record: ConsoleSessionRecord): Promise<void> {
    await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: ConsoleSession.toItem(record) }));
  }

  /** Consistent: a session signed out a moment ago must not authenticate. */
  get(idHash: string): Promise<ConsoleSessionRecord | undefined> {
    return this.#t.get(ConsoleSession, consoleSessionKey(idHash), true);
  }

  async delete(idHash: string): Promise<void> {
    await this.#t.doc.send(new DeleteCommand({ TableName: this.#t.tableName, Key: consoleSessionKey(idHash) }));
  }
}
