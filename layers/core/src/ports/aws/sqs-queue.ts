/** Queue over an SQS standard queue: JSON bodies, sent with SendMessageBatch. */
import type { BatchResultErrorEntry, SendMessageBatchRequest, SQSClient, SQSClientConfig } from '@aws-sdk/client-sqs';
import type { Queue } from '../queue.ts';
import { SignedJsonClient, SQS_JSON, type AwsCredentials } from './signed-json.ts';

/** What SqsClientRef builds its client from (a subset of the SDK's SQSClientConfig). */
export interface SqsClientSettings {
  region?: string;
  /** An SQS-compatible endpoint (tests, ElasticMQ); absent in AWS (AWS_ENDPOINT_URL_SQS is honoured). */
  endpoint?: string;
  credentials?: AwsCredentials;
  maxAttempts?: number;
  /**
   * True: SendMessageBatch through the AWS SDK's SQS client (imported on the first send). Default:
   * the lean signed client (signed-json.ts), about 1 ms of CPU less per send in Lambda.
   */
  sdk?: boolean;
}

/** SendMessageBatch's answer as the queue reads it. */
interface BatchOutput {
  Failed?: BatchResultErrorEntry[];
}

/**
 * Timeouts of the lean client's sends. The SDK's SQS client has none but a 15-minute socket timeout;
 * a hung SQS must not hold a Lambda invocation that long (its log flush waits for the send).
 */
const SQS_TIMEOUTS = { connectionTimeoutMs: 3_000, requestTimeoutMs: 10_000 };

/**
 * The process's SQS client, built on the first send: the lean signed client by default (no SDK
 * module loaded at all), the SDK's SQS client when given one (tests) or asked for (`sdk: true`,
 * GW_LEAN_AWS_CALLS=OFF, or where the lean client does not know the endpoint). The gateway function
 * sends its first log event after its first answer, so its cold start loads neither. One per
 * process, shared by every queue (SqsQueueFactory).
 */
export class SqsClientRef {
  readonly #settings: SqsClientSettings;
  #client: Promise<SQSClient> | undefined;
  #lean: SignedJsonClient | undefined;

  constructor(client: SQSClient | SqsClientSettings = {}) {
    if (isClient(client)) {
      this.#settings = { sdk: true };
      this.#client = Promise.resolve(client);
    } else {
      this.#settings = client;
      if (!client.sdk) this.#lean = SignedJsonClient.create({ service: SQS_JSON, ...leanOptions(client) });
    }
  }

  /** The SDK's client (built on first use). */
  get(): Promise<SQSClient> {
    if (!this.#client) {
      const { sdk: _, ...config } = this.#settings;
      const made = import('@aws-sdk/client-sqs').then(({ SQSClient }) => new SQSClient(config satisfies SQSClientConfig));
      // A failed import is tried again on the next send rather than remembered.
      made.catch(() => (this.#client = undefined));
      this.#client = made;
    }
    return this.#client;
  }

  /** The lean client when this ref uses it (a bench counts its sends through `observe`). */
  get lean(): SignedJsonClient | undefined {
    return this.#lean;
  }

  async sendMessageBatch(input: SendMessageBatchRequest): Promise<BatchOutput> {
    if (this.#lean) return this.#lean.call<BatchOutput>('SendMessageBatch', input);
    const [client, { SendMessageBatchCommand }] = await Promise.all([this.get(), import('@aws-sdk/client-sqs')]);
    return client.send(new SendMessageBatchCommand(input));
  }
}

function leanOptions(s: SqsClientSettings) {
  return {
    region: s.region ?? process.env.AWS_REGION ?? 'us-east-1',
    endpoint: s.endpoint,
    credentials: s.credentials,
    ...(s.maxAttempts !== undefined ? { maxAttempts: s.maxAttempts } : {}),
    ...SQS_TIMEOUTS,
  };
}

const isClient = (c: SQSClient | SqsClientSettings): c is SQSClient => typeof (c as Partial<SQSClient>).send === 'function';

export interface SqsQueueOptions {
  queueUrl: string;
  /** A shared client; when absent one is built from the options below on the first send. */
  client?: SQSClient | SqsClientRef;
  region?: string;
  /** An SQS-compatible endpoint (tests, ElasticMQ); absent in AWS. */
  endpoint?: string;
  /** Send through the AWS SDK's SQS client instead of the lean signed one (GW_LEAN_AWS_CALLS=OFF). */
  sdk?: boolean;
}

/** SQS's batch limits: 10 entries, and 256 KiB for one body and for the bodies of one request. */
export const SQS_MAX_BATCH_ENTRIES = 10;
export const SQS_MAX_PAYLOAD_BYTES = 256 * 1024;
/** Sends of the entries SQS reports as failed (server faults only), before giving up. */
const MAX_SENDS = 3;

export interface SqsSendFailure {
  /** Position of the body in the `sendBatch` call (0 for `send`). */
  index: number;
  code: string;
  message: string;
  senderFault: boolean;
}

/** Some bodies were not accepted; the others were (SQS has no all-or-nothing batches). */
export class SqsSendError extends Error {
  override name = 'SqsSendError';
  readonly failures: readonly SqsSendFailure[];
  constructor(queueUrl: string, failures: SqsSendFailure[]) {
    const list = failures.map((f) => `#${f.index} ${f.code}: ${f.message}`).join('; ');
    super(`SQS did not accept ${failures.length} message(s) for ${queueUrl}: ${list}`);
    this.failures = failures;
  }
}

interface Entry {
  index: number;
  body: string;
  bytes: number;
}

export class SqsQueue<T> implements Queue<T> {
  readonly client: SqsClientRef;
  readonly queueUrl: string;

  constructor(opts: SqsQueueOptions) {
    this.queueUrl = opts.queueUrl;
    this.client =
      opts.client instanceof SqsClientRef
        ? opts.client
        : new SqsClientRef(
            opts.client ?? {
              ...(opts.region ? { region: opts.region } : {}),
              ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
              ...(opts.sdk ? { sdk: true } : {}),
            },
          );
  }

  async send(body: T): Promise<void> {
    await this.sendBatch([body]);
  }

  async sendBatch(bodies: readonly T[]): Promise<void> {
    // Encode and check everything first, so a body that cannot go sends nothing.
    const entries = bodies.map((b, index) => encode(b, index));
    const failures: SqsSendFailure[] = [];
    for (const chunk of chunks(entries)) failures.push(...(await this.#sendChunk(chunk)));
    if (failures.length > 0)
      throw new SqsSendError(
        this.queueUrl,
        failures.sort((a, b) => a.index - b.index),
      );
  }

  /** Sends one request's worth, resending entries that failed on SQS's side; answers the rest. */
  async #sendChunk(chunk: Entry[]): Promise<SqsSendFailure[]> {
    let pending = chunk;
    const final: SqsSendFailure[] = [];
    for (let send = 1; pending.length > 0; send++) {
      const out = await this.client.sendMessageBatch({
        QueueUrl: this.queueUrl,
        // Ids are only unique within a request; the body's position is one.
        Entries: pending.map((e) => ({ Id: String(e.index), MessageBody: e.body })),
      });
      const failed = new Map<string, BatchResultErrorEntry>((out.Failed ?? []).map((f) => [f.Id ?? '', f]));
      const retry: Entry[] = [];
      for (const e of pending) {
        const f = failed.get(String(e.index));
        if (!f) continue;
        // A sender fault (bad body) fails the same way every time.
        if (!f.SenderFault && send < MAX_SENDS) retry.push(e);
        else final.push({ index: e.index, code: f.Code ?? 'Unknown', message: f.Message ?? '', senderFault: !!f.SenderFault });
      }
      pending = retry;
    }
    return final;
  }
}

function encode(body: unknown, index: number): Entry {
  const json = JSON.stringify(body) as string | undefined;
  if (json === undefined) throw new TypeError(`Message #${index} has no JSON form`);
  // JSON leaves U+FFFE and U+FFFF as they are, and SQS refuses them; escaped they mean the same.
  const escaped = json.replace(/[\ufffe\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
  const bytes = Buffer.byteLength(escaped, 'utf8');
  if (bytes > SQS_MAX_PAYLOAD_BYTES) {
    throw new RangeError(`Message #${index} is ${bytes} bytes of JSON, over SQS's limit of ${SQS_MAX_PAYLOAD_BYTES} bytes (256 KiB)`);
  }
  return { index, body: escaped, bytes };
}

/** Requests of at most 10 entries whose bodies add up to at most 256 KiB, in order. */
function* chunks(entries: Entry[]): Generator<Entry[]> {
  let chunk: Entry[] = [];
  let bytes = 0;
  for (const e of entries) {
    if (chunk.length === SQS_MAX_BATCH_ENTRIES || bytes + e.bytes > SQS_MAX_PAYLOAD_BYTES) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(e);
    bytes += e.bytes;
  }
  if (chunk.length > 0) yield chunk;
}
