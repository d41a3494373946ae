/**
 * Starts DynamoDB Local once for the run, in memory on a free port, and stops it afterwards; builds
 * the console (dist/console/) for the browser tests when its sources changed since the last build.
 */
import type { TestProject } from 'vitest/node';
import { startDynamoDBLocal, type DynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { buildConsole } from '../../infra/local-build.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

let ddb: DynamoDBLocal | undefined;

export async function setup(project: TestProject): Promise<void> {
  [ddb] = await Promise.all([startDynamoDBLocal({ dataDir: ':memory:' }), buildConsole({ ifChanged: true })]);
  project.provide('dynamodbEndpoint', ddb.endpoint);
}

export async function teardown(): Promise<void> {
  await ddb?.stop();
}
