/**
 * The adapters a runtime hands the core: everything outside the process but DynamoDB. The
 * composition root of each runtime picks them (`awsAdapters` in Lambda, `localAdapters` for the
 * local server and tests), so the core never asks which runtime it is in.
 */
import type { Upstream } from './upstream.ts';
import type { BatchRunnerFactory } from './batch-runner.ts';
import type { BlobStore } from './blob.ts';
import type { Cipher } from './cipher.ts';
import type { Clock } from './clock.ts';
import type { Logger } from './logger.ts';
import type { Mailer } from './mailer.ts';
import type { QueueFactory } from './queue-factory.ts';
import type { SecretManagers } from './secret-managers.ts';

export interface RuntimeAdapters {
  blobs: BlobStore;
  mailer: Mailer;
  /** Queues by name: SQS in AWS (`QUEUE_URL_<NAME>`), in-process locally. */
  queues: QueueFactory;
  /** Encrypts provider credentials before they reach the table (KMS in AWS, a key file locally). */
  cipher: Cipher;
  logger: Logger;
  /** Absent: the system clock. Tests inject a manual one. */
  clock?: Clock;
  /** Outbound HTTP to providers; absent: one built from the trusted hosts (tests point it at a mock). */
  upstream?: Upstream;
  /** Starts gateway-run batches (Step Functions in AWS, the in-process driver locally); absent: batches held by the gateway cannot start (503). */
  batchRunner?: BatchRunnerFactory;
  /** Clients of the secret managers; absent: AWS Secrets Manager, Vault and Key Vault over the network. */
  secretManagers?: SecretManagers;
}
