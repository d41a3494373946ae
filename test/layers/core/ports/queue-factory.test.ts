/** Queues by name: in-process locally, SQS from `QUEUE_URL_<NAME>` in AWS; and which one createDeps picks. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../../layers/core/src/config.ts';
import { createDeps } from '../../../../layers/core/src/deps.ts';
import { awsAdapters } from '../../../../layers/core/src/ports/aws/adapters.ts';
import { LOCAL_QUEUE_OPTIONS, localAdapters } from '../../../../layers/core/src/local-adapters.ts';
import { LOGS_QUEUE } from '../../../../layers/core/src/observability/messages.ts';
import { SesMailer } from '../../../../layers/core/src/ports/aws/ses-mailer.ts';
import { SqsQueue } from '../../../../layers/core/src/ports/aws/sqs-queue.ts';
import { ManualClock } from '../../../../layers/core/src/ports/clock.ts';
import { InProcessQueue } from '../../../../layers/core/src/ports/local/in-process-queue.ts';
import { OutboxMailer } from '../../../../layers/core/src/ports/local/outbox-mailer.ts';
import { LocalQueueFactory, queueUrlVariable, SqsQueueFactory } from '../../../../layers/core/src/ports/queue-factory.ts';

describe('queueUrlVariable', () => {
  it.each([
    ['log-events', 'QUEUE_URL_LOG_EVENTS'],
    ['alerts', 'QUEUE_URL_ALERTS'],
    ['batch.work v2', 'QUEUE_URL_BATCH_WORK_V2'],
  ])('%s -> %s', (name, variable) => {
    expect(queueUrlVariable(name)).toBe(variable);
  });
});

describe('LocalQueueFactory', () => {
  it('keeps one in-process queue per name, which a consumer attaches to', async () => {
    const queues = new LocalQueueFactory({ clock: new ManualClock() });
    const producer = queues.get<{ n: number }>('log-events');
    expect(producer).toBeInstanceOf(InProcessQueue);
    expect(queues.get('log-events')).toBe(producer);
    expect(queues.get('alerts')).not.toBe(producer);

    const seen: number[] = [];
    queues.get<{ n: number }>('log-events').setConsumer(async (batch) => {
      seen.push(...batch.map((m) => m.body.n));
      return [];
    });
    await producer.sendBatch([{ n: 1 }, { n: 2 }]);
    await queues.get('log-events').drain();
    expect(seen).toEqual([1, 2]);
  });

  it('gives a queue its own options over the defaults: the local logs queue hands its consumer up to 250 messages at once', async () => {
    const queues = new LocalQueueFactory({ clock: new ManualClock() }, undefined, LOCAL_QUEUE_OPTIONS);
    const sizes: Record<string, number[]> = { logs: [], alerts: [] };
    for (const name of ['logs', 'alerts'] as const) {
      const q = queues.get<number>(name);
      await q.sendBatch(Array.from({ length: 300 }, (_, i) => i));
      q.setConsumer(async (batch) => (sizes[name]?.push(batch.length), []));
      await q.drain();
    }
    expect(LOCAL_QUEUE_OPTIONS[LOGS_QUEUE]).toEqual({ batchSize: 250 });
    expect(sizes.logs).toEqual([250, 50]);
    expect(sizes.alerts).toEqual([25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25]);
  });

  it('drains across queues, also of messages consumers forward to queues drained before', async () => {
    const queues = new LocalQueueFactory({ clock: new ManualClock() });
    const delivered: string[] = [];
    queues.get<string>('a').setConsumer(async (batch) => {
      delivered.push(...batch.map((m) => `a:${m.body}`));
      return [];
    });
    queues.get<string>('b').setConsumer(async (batch) => {
      delivered.push(...batch.map((m) => `b:${m.body}`));
      // Forwarded to a queue created on the fly and to one that may be drained already.
      for (const m of batch) await queues.get<string>(m.body === 'x' ? 'a' : 'c').send(`${m.body}!`);
      return [];
    });
    queues.get<string>('c').setConsumer(async (batch) => {
      delivered.push(...batch.map((m) => `c:${m.body}`));
      return [];
    });
    await queues.get<string>('b').sendBatch(['x', 'y']);
    await queues.drain();
    expect(delivered.sort()).toEqual(['a:x!', 'b:x', 'b:y', 'c:y!']);
  });

  it('closes every queue', async () => {
    const queues = new LocalQueueFactory({ clock: new ManualClock() });
    const queue = queues.get<number>('q');
    queue.setConsumer(async () => []);
    await queue.send(1);
    await queues.close();
    await expect(queue.send(2)).rejects.toThrow('Queue q is closed');
  });
});

describe('SqsQueueFactory', () => {
  const URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/gantry-log-events';

  it('builds an SQS queue from QUEUE_URL_<NAME>, once per name, on one client', () => {
    const queues = new SqsQueueFactory({
      queueUrls: { QUEUE_URL_LOG_EVENTS: URL, QUEUE_URL_ALERTS: `${URL}-alerts` },
      region: 'eu-west-1',
    });
    const queue = queues.get('log-events');
    expect(queue).toBeInstanceOf(SqsQueue);
    expect(queue.queueUrl).toBe(URL);
    expect(queues.get('log-events')).toBe(queue);
    expect(queues.get('alerts').client).toBe(queue.client);
    // An SQS queue is consumed by its worker function, not through the factory.
    expect('setConsumer' in queue).toBe(false);
  });

  it('throws naming the variable when the URL is missing', () => {
    const queues = new SqsQueueFactory({ queueUrls: {} });
    expect(() => queues.get('batch-work')).toThrow('No URL for queue "batch-work": set QUEUE_URL_BATCH_WORK');
  });
});

/** The composition roots: the local server's adapters and a Lambda function's. */
const createLocal = (env: Record<string, string>) => {
  const config = loadConfig(env);
  return createDeps(config, localAdapters(config));
};
const createAws = (env: Record<string, string>) => {
  const config = loadConfig(env);
  return createDeps(config, awsAdapters(config));
};

describe('createDeps', () => {
  const local = { TABLE_NAME: 't', DYNAMODB_ENDPOINT: 'http://127.0.0.1:1', AWS_REGION: 'local', LOG_LEVEL: 'SILENT' };
  const aws = { TABLE_NAME: 't', AWS_REGION: 'eu-west-1', LOG_LEVEL: 'SILENT' };

  it('uses the outbox and in-process queues locally, even with MAIL_FROM set', () => {
    const deps = createLocal({ ...local, MAIL_FROM: 'alerts@example.com', GW_OUTBOX_DIR: '/tmp/gantry-test-outbox' });
    expect(deps.mailer).toBeInstanceOf(OutboxMailer);
    expect((deps.mailer as OutboxMailer).dir).toBe('/tmp/gantry-test-outbox');
    expect(deps.queues).toBeInstanceOf(LocalQueueFactory);
    deps.upstream.close();
  });

  it('uses SES and SQS in AWS', () => {
    const deps = createAws({ ...aws, MAIL_FROM: 'alerts@example.com', QUEUE_URL_LOG_EVENTS: 'https://sqs.eu-west-1.amazonaws.com/1/q' });
    expect(deps.mailer).toBeInstanceOf(SesMailer);
    expect(deps.queues).toBeInstanceOf(SqsQueueFactory);
    expect((deps.queues.get('log-events') as SqsQueue<unknown>).queueUrl).toBe('https://sqs.eu-west-1.amazonaws.com/1/q');
    deps.upstream.close();
  });

  it('refuses to send mail in AWS without MAIL_FROM, naming it, rather than writing it to /tmp', async () => {
    const deps = createAws(aws);
    expect(deps.mailer).not.toBeInstanceOf(OutboxMailer);
    await expect(deps.mailer.send({ to: ['a@example.com'], subject: 's', text: 't', kind: 'test' })).rejects.toMatchObject({
      status: 503,
      message: expect.stringContaining('MAIL_FROM'),
    });
    deps.upstream.close();
  });
});
