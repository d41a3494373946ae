/** Starts DynamoDB Local once for the run, in memory on a free port, and stops it afterwards. */
import type { TestProject } from 'vitest/node';
import { startDynamoDBLocal, type DynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamodbEndpoint: string;
  }
}

let ddb: DynamoDBLocal | undefined;

export async function setup(project: TestProject): Promise<void> {
  ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
  project.provide('dynamodbEndpoint', ddb.endpoint);
}

export async function teardown(): Promise<void> {
  await ddb?.stop();
}
