/**
 * CPU per call of the two AWS calls a warm gateway request makes, through the AWS SDK and through
 * the lean signed client (ports/aws/signed-json.ts): the limit counter's conditional UpdateItem
 * (LimitsRepository.reserve, against DynamoDB Local) and the log queue's SendMessageBatch of one
 * event (SqsQueue, against the SQS stand-in of test/support/aws-stand-ins.ts in a child process, so
 * that its CPU is not counted). `process.cpuUsage()` over N sequential calls after a warm-up, in
 * interleaved rounds; the median round per variant.
 *
 *   node test/bench/aws-calls.ts [calls per round, default 2000] [rounds, default 3]
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { SqsClientRef, SqsQueue } from '../../layers/core/src/ports/aws/sqs-queue.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { createDocumentClient } from '../../layers/core/src/store/db.ts';
import { LimitsRepository } from '../../layers/core/src/store/limits.ts';
import { TableClient } from '../../layers/core/src/store/repositories.ts';
import { startStandIns } from '../support/aws-stand-ins.ts';

const CREDS = { accessKeyId: 'AKIDBENCH', secretAccessKey: 'bench-secret' };

if (process.argv[2] === 'stand-in') {
  const s = await startStandIns();
  process.send?.(s.url);
  process.on('disconnect', () => void s.close().then(() => process.exit(0)));
} else {
  await main(Number(process.argv[2] ?? 2000), Number(process.argv[3] ?? 3));
}

async function main(n: number, rounds: number): Promise<void> {
  const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
  const child = fork(fileURLToPath(import.meta.url), ['stand-in'], { stdio: 'inherit' });
  try {
    const standIn = await new Promise<string>((resolve) => child.once('message', (m) => resolve(String(m))));
    const TableName = `bench-${randomUUID()}`;
    const admin = new DynamoDBClient({ endpoint: ddb.endpoint, region: 'local', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    await ensureTable(admin, TableName);
    admin.destroy();

    const counter = (lean: boolean) => {
      const limits = new LimitsRepository(new TableClient(createDocumentClient({ region: 'local', endpoint: ddb.endpoint, lean }), TableName));
      const key = { pk: `RLC#${randomUUID()}`, sk: 'C' };
      return () => limits.reserve(key, 1, 1e12, { expires_at: 1 }).then(() => undefined);
    };
    const queueUrl = `${standIn}/123456789012/gantry-log-events`;
    const event = { id: randomUUID(), model: 'gpt-4o-mini', usage: { prompt_tokens: 12, completion_tokens: 40 }, status: 200, pad: 'x'.repeat(900) };
    const sqs = (lean: boolean) => {
      const client = lean
        ? new SqsClientRef({ region: 'us-east-1', endpoint: standIn, credentials: CREDS })
        : new SQSClient({ region: 'us-east-1', endpoint: standIn, credentials: CREDS });
      const queue = new SqsQueue({ queueUrl, client });
      return () => queue.send(event);
    };
    const variants: Record<string, () => Promise<void>> = {
      'UpdateItem sdk': counter(false),
      'UpdateItem lean': counter(true),
      'SendMessageBatch sdk': sqs(false),
      'SendMessageBatch lean': sqs(true),
    };
    const results: Record<string, number[]> = {};
    for (const [name, call] of Object.entries(variants)) {
      for (let i = 0; i < 300; i++) await call();
      results[name] = [];
    }
    for (let r = 0; r < rounds; r++) {
      for (const [name, call] of Object.entries(variants)) {
        const cpu = process.cpuUsage();
        for (let i = 0; i < n; i++) await call();
        const used = process.cpuUsage(cpu);
        results[name]!.push((used.user + used.system) / n);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    const report = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, { median_us: Math.round(median(v)), rounds_us: v.map(Math.round) }]));
    process.stdout.write(`${JSON.stringify({ calls_per_round: n, rounds, cpu_per_call: report }, null, 2)}\n`);
  } finally {
    child.disconnect();
    await ddb.stop();
  }
  process.exit(0);
}
