/** The adapters of a Lambda function: S3, SES, SQS and KMS, configured from the environment. */
import os from 'node:os';
import path from 'node:path';
import { Logger as PowertoolsLogger } from '@aws-lambda-powertools/logger';
import type { AppConfig } from '../../config.ts';
import type { RuntimeAdapters } from '../adapters.ts';
import { unconfiguredCipher, type Cipher } from '../cipher.ts';
import { FileCipher } from '../local/cipher-file.ts';
import { FsBlobStore } from '../local/blob-fs.ts';
import { unconfiguredMailer } from '../mailer.ts';
import { SqsQueueFactory } from '../queue-factory.ts';
import { S3BlobStore } from './blob-s3.ts';
import { KmsCipher } from './cipher-kms.ts';
import { SesMailer } from './ses-mailer.ts';

/** The service's logger as Powertools builds it (JSON lines for CloudWatch). */
export const serviceLogger = (config: Pick<AppConfig, 'logLevel'>): PowertoolsLogger =>
  new PowertoolsLogger({ serviceName: 'gantry', logLevel: config.logLevel });

/**
 * In AWS a key file would vanish with the container: only CIPHER_KMS_KEY_ID (or an explicit key
 * file) will do, and without either, storing a credential fails naming the variable.
 */
function awsCipher(config: AppConfig): Cipher {
  if (config.cipherKmsKeyId) return new KmsCipher({ keyId: config.cipherKmsKeyId, region: config.region });
  if (config.cipherKeyFile) return new FileCipher({ keyFile: config.cipherKeyFile });
  return unconfiguredCipher('No credential cipher is configured: set CIPHER_KMS_KEY_ID (or GW_CIPHER_KEY_FILE)');
}

export function awsAdapters(config: AppConfig, logger = serviceLogger(config)): RuntimeAdapters {
  return {
    blobs: config.blobBucket
      ? new S3BlobStore({ bucket: config.blobBucket, region: config.region })
      : new FsBlobStore(config.blobDir ?? path.join(os.tmpdir(), 'gantry-blobs')),
    // No sender: mail fails naming the setting instead of landing in the container's /tmp.
    mailer: config.mailFrom
      ? new SesMailer({ from: config.mailFrom, region: config.region })
      : unconfiguredMailer('Mail is not configured on this deployment: set MAIL_FROM (CDK setting gantry:mailFrom) to send invites and alerts'),
    queues: new SqsQueueFactory({ queueUrls: config.queueUrls, region: config.region, ...(config.leanAwsCalls === false ? { sdk: true } : {}) }),
    cipher: awsCipher(config),
    logger,
  };
}
