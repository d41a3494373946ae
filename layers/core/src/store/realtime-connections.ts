/**
 * Realtime sessions held by API Gateway's WebSocket API: one item per connection, written at
 * `$connect`, grown by each `$default` invocation (atomic ADDs of message counts and usage, since
 * invocations of one session may run in different Lambda instances), and taken (deleted, its last
 * figures returned) at `$disconnect`, which logs the session. A TTL past API Gateway's 2-hour
 * connection limit removes the item of a session whose `$disconnect` never ran.
 */
import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { Entity } from './entity.ts';
import type { TableClient } from './repositories.ts';

/** The figures a session adds up: message counts and the usage of its `response.done` events. */
export const SESSION_COUNTERS = [
  'from_client',
  'from_provider',
  'responses',
  'total_tokens',
  'input_tokens',
  'output_tokens',
  'input_text_tokens',
  'input_audio_tokens',
  'input_cached_tokens',
  'output_text_tokens',
  'output_audio_tokens',
] as const;

export type SessionCounter = (typeof SESSION_COUNTERS)[number];
export type SessionCounts = Record<SessionCounter, number>;

export interface RealtimeConnectionRecord {
  connection_id: string;
  trace_id: string;
  /** The session's log id, answered at `$connect` in `x-gw-log-id`. */
  log_id: string;
  /** Clock milliseconds. */
  started_at: number;
  model: string;
  /** The upgrade request (URL and headers, credentials included) encrypted with the cipher port. */
  sealed_request: string;
  /** The provider that answered, once a `$default` invocation has opened its socket. */
  provider?: string;
  /** Unix seconds. */
  expires_at: number;
  counts: SessionCounts;
}

const key = (connectionId: string) => ({ pk: `RTCONN#${connectionId}`, sk: 'RTCONN' });

export const RealtimeConnection = new Entity<RealtimeConnectionRecord>({
  name: 'RealtimeConnection',
  key: (r) => key(r.connection_id),
  ttl: (r) => r.expires_at,
});

export const zeroCounts = (): SessionCounts => Object.fromEntries(SESSION_COUNTERS.map((c) => [c, 0])) as SessionCounts;

export class RealtimeConnectionRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async put(rec: RealtimeConnectionRecord): Promise<void> {
    await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: RealtimeConnection.toItem(rec) }));
  }

  get(connectionId: string): Promise<RealtimeConnectionRecord | undefined> {
    return this.#t.get(RealtimeConnection, key(connectionId), true);
  }

  /** Adds what one instance saw to the session's figures; nothing when the session has ended. */
  async add(connectionId: string, delta: Partial<SessionCounts>, provider?: string): Promise<void> {
    const names: Record<string, string> = {};
    const values: Record<string, unknown> = {};
    const sets: string[] = [];
    for (const [i, [name, n]] of Object.entries(delta).entries()) {
      if (!n) continue;
      names['#c'] = 'counts';
      names[`#n${i}`] = name;
      values[`:n${i}`] = n;
      sets.push(`#c.#n${i} = #c.#n${i} + :n${i}`);
    }
    if (provider) {
      names['#p'] = 'provider';
      values[':p'] = provider;
      sets.push('#p = :p');
    }
    if (sets.length === 0) return;
    try {
      await this.#t.doc.send(
        new UpdateCommand({
          TableName: this.#t.tableName,
          Key: key(connectionId),
          UpdateExpression: `SET ${sets.join(', ')}`,
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        }),
      );
    } catch (err) {
      if ((err as { name?: string }).name !== 'ConditionalCheckFailedException') throw err;
    }
  }

  /** Deletes the session and returns its last figures; undefined when another invocation took it first. */
  async take(connectionId: string): Promise<RealtimeConnectionRecord | undefined> {
    const out = await this.#t.doc.send(new DeleteCommand({ TableName: this.#t.tableName, Key: key(connectionId), ReturnValues: 'ALL_OLD' }));
    return out.Attributes ? RealtimeConnection.fromItem(out.Attributes) : undefined;
  }
}

/**
 * The Fargate relay's pin: which task holds a session's provider socket (its `ip:port` as the
 * other tasks reach it). API Gateway sends each route to any task; one that does not hold the
 * session forwards it to the holder named here. Written at `$connect`, dropped by the holder when
 * the session ends; the TTL removes the pin of a task that was killed.
 */
export interface RealtimeHolderRecord {
  connection_id: string;
  holder: string;
  /** Unix seconds. */
  expires_at: number;
}

const holderKey = (connectionId: string) => ({ pk: `RTCONN#${connectionId}`, sk: 'HOLDER' });

export const RealtimeHolder = new Entity<RealtimeHolderRecord>({
  name: 'RealtimeHolder',
  key: (r) => holderKey(r.connection_id),
  ttl: (r) => r.expires_at,
});

export class RealtimeHolderRepository {
  readonly #t: TableClient;
  constructor(t: TableClient) {
    this.#t = t;
  }

  async put(rec: RealtimeHolderRecord): Promise<void> {
    await this.#t.doc.send(new PutCommand({ TableName: this.#t.tableName, Item: RealtimeHolder.toItem(rec) }));
  }

  get(connectionId: string): Promise<RealtimeHolderRecord | undefined> {
    return this.#t.get(RealtimeHolder, holderKey(connectionId), true);
  }

  /** Drops the pin if `holder` still holds it; true when this call dropped it (so only one caller ends the session). */
  async drop(connectionId: string, holder: string): Promise<boolean> {
    try {
      await this.#t.doc.send(
        new DeleteCommand({
          TableName: this.#t.tableName,
          Key: holderKey(connectionId),
          ConditionExpression: 'holder = :h',
          ExpressionAttributeValues: { ':h': holder },
        }),
      );
      return true;
    } catch (err) {
      if ((err as { name?: string }).name === 'ConditionalCheckFailedException') return false;
      throw err;
    }
  }
}
