/** SQS records as the Lambda event source delivers them to a queue worker's handler. */
import { randomUUID } from 'node:crypto';
import type { SQSRecord } from 'aws-lambda';

/** A first delivery of `body` from the named queue. */
export const sqsRecord = (body: string, queue: string): SQSRecord => ({
  messageId: randomUUID(),
  receiptHandle: 'r',
  body,
  attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 's', ApproximateFirstReceiveTimestamp: '0' },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: `arn:aws:sqs:eu-west-1:000000000000:${queue}`,
  awsRegion: 'eu-west-1',
});
