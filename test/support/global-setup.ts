/**
 * DynamoDB Local for the lanes that need it (integration, e2e, browser): started once for the run,
 * in memory on a free port, shared by every such lane and stopped after the last one; each test
 * file makes its own table.
 */
import type { TestProject } from 'vitest/node';
import { startDynamoDBLocal, type DynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

// Each project loads this file through its own module runner, so the one instance lives on globalThis.
interface Shared {
  ddb: Promise<DynamoDBLocal>;
  users: number;
}
const KEY = Symbol.for('gantry.test.dynamodb-local');
const holder = globalThis as { [KEY]?: Shared };

export async function setup(project: TestProject): Promise<void> {
  const shared = (holder[KEY] ??= { ddb: startDynamoDBLocal({ dataDir: ':memory:' }), users: 0 });
  shared.users += 1;
  project.provide('dynamodbEndpoint', (await shared.ddb).endpoint);
}

export async function teardown(): Promise<void> {
  const shared = holder[KEY];
  if (!shared || --shared.users > 0) return;
  delete holder[KEY];
  await (await shared.ddb).stop();
}
