/**
 * Periodic jobs of the server on AWS (GW_STORAGE=aws), run by one replica at a time: a lease item
 * in the table names the replica that holds each job until it expires. The holder renews it on
 * every run; when it stops (or dies) another replica takes the job over once the lease has expired
 * (or at once, when the holder stopped cleanly and gave it back). EventBridge Scheduler does this
 * for the Lambda functions.
 */
import { DeleteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { runEvery } from '../../layers/core/src/ports/local/schedule.ts';
import type { Logger } from '../../layers/core/src/ports/logger.ts';

export interface LeaseTable {
  doc: DynamoDBDocumentClient;
  tableName: string;
}

const leaseKey = (job: string) => ({ pk: `LEASE#${job}`, sk: 'LEASE' });

const isConditionFailure = (err: unknown) => err instanceof Error && err.name === 'ConditionalCheckFailedException';

/**
 * Takes or renews the lease of `job` for `holder` until `now + ttlMs`; false while another holder's
 * lease runs. The item expires (DynamoDB TTL) a day after the lease, once nobody renews it.
 */
export async function acquireLease(table: LeaseTable, job: string, holder: string, now: number, ttlMs: number): Promise<boolean> {
  try {
    await table.doc.send(
      new UpdateCommand({
        TableName: table.tableName,
        Key: leaseKey(job),
        UpdateExpression: 'SET holder = :me, expires_at = :until, #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(pk) OR holder = :me OR expires_at < :now',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':me': holder, ':until': now + ttlMs, ':now': now, ':ttl': Math.ceil((now + ttlMs) / 1000) + 86_400 },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** Gives the lease back if `holder` still holds it, so another replica need not wait for it to expire. */
export async function releaseLease(table: LeaseTable, job: string, holder: string): Promise<void> {
  try {
    await table.doc.send(
      new DeleteCommand({ TableName: table.tableName, Key: leaseKey(job), ConditionExpression: 'holder = :me', ExpressionAttributeValues: { ':me': holder } }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

export interface LeasedJobOptions {
  table: LeaseTable;
  job: string;
  holder: string;
  everyMs: number;
  run: () => Promise<unknown>;
  logger: Logger;
  now?: () => number;
}

/**
 * Runs `run` every `everyMs` on the replica that holds the job's lease. The lease outlasts two
 * missed runs, so a slow run or a slow table does not hand the job over while its holder lives.
 * Returns the function that stops it and gives the lease back.
 */
export function startLeasedJob(opts: LeasedJobOptions): () => Promise<void> {
  const now = opts.now ?? Date.now;
  const ttlMs = opts.everyMs * 2 + 30_000;
  const stop = runEvery(
    opts.everyMs,
    async () => {
      if (await acquireLease(opts.table, opts.job, opts.holder, now(), ttlMs)) await opts.run();
    },
    (err) => opts.logger.error('scheduled job failed', { job: opts.job, error: err }),
  );
  return async () => {
    stop();
    await releaseLease(opts.table, opts.job, opts.holder).catch((err: unknown) => opts.logger.warn('lease release failed', { job: opts.job, error: err }));
  };
}
