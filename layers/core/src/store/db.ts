/** The DynamoDB document client, created once per process from the configuration. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DYNAMODB_JSON, SignedJsonClient } from '../ports/aws/signed-json.ts';
import { guardKeyLimits } from './key-limits.ts';
import { sendSingleItemsSigned } from './signed-doc.ts';

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
  /** Get/Put/UpdateCommand over the lean signed client (store/signed-doc.ts); false: all through the SDK. Default true. */
  lean?: boolean | undefined;
}

/** DynamoDB Local takes any credentials; the SDK client is given these too. */
const LOCAL_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' };

export function createDocumentClient(opts: DbOptions): DynamoDBDocumentClient {
  const timeouts = opts.timeouts ?? DB_TIMEOUTS;
  const client = new DynamoDBClient({
    region: opts.region,
    maxAttempts: timeouts.maxAttempts,
    // Without throwOnRequestTimeout the SDK only warns when the request timeout passes.
    requestHandler: { connectionTimeout: timeouts.connectionTimeoutMs, requestTimeout: timeouts.requestTimeoutMs, throwOnRequestTimeout: true },
    ...(opts.endpoint ? { endpoint: opts.endpoint, credentials: LOCAL_CREDENTIALS } : {}),
  });
  const doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  guardKeyLimits(doc);
  if (opts.lean === false) return doc;
  // The same endpoint, credentials, timeouts and attempts as the SDK client above.
  const lean = SignedJsonClient.create({
    service: DYNAMODB_JSON,
    region: opts.region,
    endpoint: opts.endpoint,
    credentials: opts.endpoint ? LOCAL_CREDENTIALS : undefined,
    connectionTimeoutMs: timeouts.connectionTimeoutMs,
    requestTimeoutMs: timeouts.requestTimeoutMs,
    maxAttempts: timeouts.maxAttempts,
  });
  return lean ? sendSingleItemsSigned(doc, lean) : doc;
}
