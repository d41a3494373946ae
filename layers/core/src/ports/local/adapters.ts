/**
 * The adapters of the local server (and of the tests): files in the data directory, mail to an
 * outbox, in-process queues, and a key file (or KMS when CIPHER_KMS_KEY_ID is set).
 */
import os from 'node:os';
import path from 'node:path';
import type { AppConfig } from '../../config.ts';
import type { RuntimeAdapters } from '../adapters.ts';
import { KmsCipher } from '../aws/cipher-kms.ts';
import { serviceLogger } from '../aws/adapters.ts';
import { systemClock, type Clock } from '../clock.ts';
import { LocalQueueFactory } from '../queue-factory.ts';
import { LocalBatchDriver } from './batch-driver.ts';
import { FsBlobStore } from './blob-fs.ts';
import { FileCipher } from './cipher-file.ts';
import { OutboxMailer } from './outbox-mailer.ts';

export function localAdapters(config: AppConfig, clock: Clock = systemClock): RuntimeAdapters {
  const logger = serviceLogger(config);
  return {
    blobs: new FsBlobStore(config.blobDir ?? path.join(os.tmpdir(), 'gantry-blobs')),
    mailer: new OutboxMailer(config.outboxDir ?? path.join(os.tmpdir(), 'gantry-outbox'), clock),
    // Queue timing (batching, redelivery backoff) is not business time: it always runs on real
    // timers, never on an injected test clock, which it would otherwise move.
    queues: new LocalQueueFactory({}, config.spool ? { ...config.spool, maxInMemory: config.queueMaxInMemory, logger } : undefined),
    cipher: config.cipherKmsKeyId ? new KmsCipher({ keyId: config.cipherKmsKeyId, region: config.region }) : new FileCipher({ keyFile: config.cipherKeyFile }),
    logger,
    clock,
    batchRunner: (deps) => new LocalBatchDriver(deps),
  };
}
