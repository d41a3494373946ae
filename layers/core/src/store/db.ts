/** The DynamoDB document client, created once per process from the configuration. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { guardKeyLimits } from './key-limits.ts';

export interface DbTimeouts {
  /** Opening a connection. */
  connectionTimeoutMs: number;
  /** The whole request once connected: a database that accepts and never answers fails here. */
  requestTimeoutMs: number;
  /** Attempts per call (the SDK retries timeouts and throttling with backoff). */
  maxAttempts: number;
}

/** A call fails within about maxAttempts x (connection + request) timeouts, never hangs. */
const DB_TIMEOUTS: DbTimeouts = { connectionTimeoutMs: 1_000, requestTimeoutMs: 3_000, maxAttempts: 2 };

export interface DbOptions {
  region: string;
  /** DynamoDB Local's URL; absent in AWS. */
  endpoint?: string | undefined;
  timeouts?: DbTimeouts;
}

export function createDocumentClient(opts: DbOptions): DynamoDBDocumentClient {
  const timeouts = opts.timeouts ?? DB_TIMEOUTS;
  const client = new DynamoDBClient({
    region: opts.region,
    maxAttempts: timeouts.maxAttempts,
    // Without throwOnRequestTimeout the SDK only warns when the request timeout passes.
    requestHandler: { connectionTimeout: timeouts.connectionTimeoutMs, requestTimeout: timeouts.requestTimeoutMs, throwOnRequestTimeout: true },
    ...(opts.endpoint ? { endpoint: opts.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  const doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  guardKeyLimits(doc);
  return doc;
}
