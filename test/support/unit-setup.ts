/**
 * The unit lane has no DynamoDB Local. Its `dynamodbEndpoint` is a loopback tripwire: every call
 * (createTestDeps, startGantry, a client on inject('dynamodbEndpoint')) fails at once with an error
 * that says where the file belongs, instead of hanging or reaching AWS.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestProject } from 'vitest/node';

export const UNIT_LANE_DYNAMODB =
  'This test file reaches DynamoDB Local, which the unit lane does not start: ' +
  'add it to INTEGRATION in vitest.config.ts (or use in-memory fakes of the ports).';

let server: http.Server | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = http.createServer((req, res) => {
    req.resume();
    // DynamoDB's JSON error shape, so the SDK throws it with this name and message (400: no retries).
    res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
    res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#UnitLaneError', message: UNIT_LANE_DYNAMODB }));
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  project.provide('dynamodbEndpoint', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

export async function teardown(): Promise<void> {
  await new Promise((resolve) => server?.close(resolve));
}
