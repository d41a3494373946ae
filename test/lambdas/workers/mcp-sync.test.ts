/**
 * The mcp-sync worker as Lambda runs it: an SQS event of sync messages in, each integration's
 * MCP server (the SDK's, test/support/mcp-upstream.ts) contacted, metadata and capabilities stored
 * on DynamoDB Local; a server that refuses is recorded as failed, an unreadable message is reported.
 */
import { randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../layers/core/src/deps.ts';
import type { McpSyncMessage } from '../../../layers/core/src/mcp/messages.ts';
import { McpRepository, sealMcpSecrets, type McpIntegrationRecord } from '../../../layers/core/src/store/mcp.ts';
import { createMcpSyncHandler } from '../../../lambdas/workers/mcp-sync/handler.ts';
import { createTestDeps } from '../../support/deps.ts';
import { sqsRecord as queueRecord } from '../../support/sqs-event.ts';
import { MCP_DEFAULT_TOOLS, MCP_PROMPTS, startMcpUpstream, type McpUpstream } from '../../support/mcp-upstream.ts';

const context = { functionName: 'gantry-mcp-sync', awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 } as unknown as Context;
const HEADER = { name: 'x-api-key', value: 'sync-secret-0123456789' };
const ORG = 'org-sync';

const sqsRecord = (body: string): SQSRecord => queueRecord(body, 'mcp-sync');
const message = (id: string): SQSRecord => sqsRecord(JSON.stringify({ organisation_id: ORG, mcp_integration_id: id } satisfies McpSyncMessage));

describe('mcp-sync worker', () => {
  let deps: CoreDeps;
  let upstream: McpUpstream;
  let mcp: McpRepository;

  beforeAll(async () => {
    [deps, upstream] = await Promise.all([createTestDeps(), startMcpUpstream({ requiredHeader: HEADER, name: 'sync-server', version: '3.1.4' })]);
    mcp = new McpRepository(deps.repos.table);
  });
  afterAll(async () => {
    deps.upstream.close();
    await upstream.close();
  });

  /** An integration as the admin API stores it (its header sealed), with its metadata pending. */
  async function integration(headerValue: string): Promise<string> {
    const id = `mcpi-${randomUUID()}`;
    const now = new Date().toISOString();
    const rec: McpIntegrationRecord = {
      id,
      organisation_id: ORG,
      workspace_id: null,
      slug: `s-${id}`,
      name: 'Files',
      description: null,
      url: upstream.url,
      auth_type: 'headers',
      transport: 'http',
      configurations: {},
      masked_configurations: {},
      secret: await sealMcpSecrets(deps.cipher, ORG, id, { headers: { [HEADER.name]: headerValue } }),
      global_workspace_access: true,
      workspace_ids: [],
      new_capabilities_enabled: true,
      status: 'active',
      created_at: now,
      last_updated_at: now,
      created_by: null,
      last_updated_by: null,
    };
    await mcp.createIntegration(rec);
    expect((await mcp.getMetadata(ORG, id)).sync_status).toBe('pending');
    return id;
  }

  it('syncs each queued integration, records a refusing server as failed, and reports only the unreadable message', async () => {
    const [good, wrong] = await Promise.all([integration(HEADER.value), integration('not-the-secret')]);
    const bad = sqsRecord('{not json');
    const handler = createMcpSyncHandler(() => Promise.resolve(deps)) as unknown as (e: SQSEvent, c: Context) => Promise<SQSBatchResponse>;
    const out = await handler({ Records: [message(good), bad, message(wrong)] }, context);
    expect(out.batchItemFailures).toEqual([{ itemIdentifier: bad.messageId }]);

    expect(await mcp.getMetadata(ORG, good)).toMatchObject({ sync_status: 'synced', server_name: 'sync-server', server_version: '3.1.4', sync_error: null });
    const found = await mcp.getCapabilities(ORG, good);
    expect(
      found
        .filter((c) => c.type === 'tool')
        .map((c) => c.name)
        .sort(),
    ).toEqual([...MCP_DEFAULT_TOOLS].sort());
    expect(
      found
        .filter((c) => c.type === 'prompt')
        .map((c) => c.name)
        .sort(),
    ).toEqual([...MCP_PROMPTS].sort());
    // The upstream saw the sealed header, opened by the worker.
    expect(upstream.requests.some((r) => r.headers[HEADER.name] === HEADER.value && r.rpc.includes('initialize'))).toBe(true);

    const refused = await mcp.getMetadata(ORG, wrong);
    expect(refused).toMatchObject({ sync_status: 'failed', server_name: null, sync_error: expect.stringContaining('403') });
    expect(refused.sync_error).not.toContain('not-the-secret');
  });

  it('skips a message for an integration deleted before the worker ran', async () => {
    const handler = createMcpSyncHandler(() => Promise.resolve(deps)) as unknown as (e: SQSEvent, c: Context) => Promise<SQSBatchResponse>;
    const out = await handler({ Records: [message(`mcpi-${randomUUID()}`)] }, context);
    expect(out.batchItemFailures).toEqual([]);
  });
});
