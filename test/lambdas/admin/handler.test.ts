/**
 * The admin function as Lambda runs it: a hand-made API Gateway REST event in, a buffered proxy
 * result out.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyResult, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBootstrap } from '../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import { createAdminHandler } from '../../../lambdas/admin/handler.ts';
import { requestEvent } from '../../support/apigw-event.ts';
import { createTestDeps } from '../../support/deps.ts';

const ADMIN_KEY = 'gw_admin-handler-owner-0123456789abcdefgh';
const context = { functionName: 'gantry-admin', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 29_000 } as unknown as Context;

type Handler = (event: APIGatewayProxyEvent, context: Context) => Promise<APIGatewayProxyResult>;

let deps: CoreDeps;
let handler: Handler;

const json = (result: APIGatewayProxyResult) => JSON.parse(result.body) as Record<string, unknown>;

beforeAll(async () => {
  deps = await createTestDeps();
  await ensureBootstrap(deps, ADMIN_KEY);
  handler = createAdminHandler(() => Promise.resolve(deps)) as unknown as Handler;
});
afterAll(() => {
  deps?.upstream.close();
});

describe('admin handler', () => {
  it('lists API keys with the owner key as a buffered JSON result', async () => {
    const result = await handler(requestEvent('GET', '/v1/api-keys', { 'x-gw-api-key': ADMIN_KEY }), context);
    expect(result.statusCode).toBe(200);
    expect(result.headers?.['content-type']).toBe('application/json');
    expect(result.isBase64Encoded).toBe(false);
    const body = json(result) as { object: string; total: number; data: { type: string }[] };
    expect(body).toMatchObject({ object: 'list', total: 1 });
    expect(body.data[0]?.type).toBe('organisation-service');
  });

  it('answers 401 AB05 in the admin shape without a key, naming the header', async () => {
    const result = await handler(requestEvent('GET', '/v1/api-keys'), context);
    expect(result.statusCode).toBe(401);
    const body = json(result);
    expect(body).toMatchObject({ object: 'error', errorCode: 'AB05', errors: [] });
    expect(body.message).toContain('x-gw-api-key');
  });

  it('creates a key from a base64-encoded body, and the query reaches the route', async () => {
    const create = await handler(
      requestEvent(
        'POST',
        '/v1/api-keys/workspace/service',
        { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' },
        Buffer.from(JSON.stringify({ name: 'from-lambda', scopes: ['completions.write'], workspace_id: 'default' })).toString('base64'),
        { isBase64Encoded: true },
      ),
      context,
    );
    expect(create.statusCode).toBe(200);
    const created = json(create) as { id: string; key: string; object: string };
    expect(created.object).toBe('api-key');
    expect(created.key).toMatch(/^gw_/);

    const list = await handler(
      requestEvent('GET', '/v1/api-keys', { 'x-gw-api-key': ADMIN_KEY }, null, {
        queryStringParameters: { workspace_id: 'default' },
        multiValueQueryStringParameters: { workspace_id: ['default'] },
      }),
      context,
    );
    const body = json(list) as { total: number; data: { id: string; key: string }[] };
    expect(body.total).toBe(1);
    expect(body.data[0]?.id).toBe(created.id);
    expect(list.body).not.toContain(created.key);
  });

  it('answers 400 AB01 naming the body for malformed JSON', async () => {
    const result = await handler(
      requestEvent('POST', '/v1/api-keys/organisation/service', { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' }, '{"name":'),
      context,
    );
    expect(result.statusCode).toBe(400);
    expect(json(result)).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'body' }] });
  });

  it('answers 400 AB01 naming the query parameter for a bad page size', async () => {
    const result = await handler(
      requestEvent('GET', '/v1/api-keys', { 'x-gw-api-key': ADMIN_KEY }, null, {
        queryStringParameters: { page_size: '0' },
        multiValueQueryStringParameters: { page_size: ['0'] },
      }),
      context,
    );
    expect(result.statusCode).toBe(400);
    expect(json(result)).toMatchObject({ errorCode: 'AB01', errors: [{ path: 'page_size' }] });
  });

  it('serves no gateway routes', async () => {
    const result = await handler(requestEvent('POST', '/v1/chat/completions', { 'x-gw-api-key': ADMIN_KEY }, '{}'), context);
    expect(result.statusCode).toBe(404);
    expect(json(result)).toMatchObject({ error: { code: 'route_not_found' } });
  });
});
