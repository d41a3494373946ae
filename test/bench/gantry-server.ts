/**
 * Gantry for the bench, run as a child process so its event loop and its resident memory are its
 * own: DynamoDB Local in memory, a fresh table, the first-start bootstrap, the local server in
 * direct mode, and a workspace key. Reports `ready` (url and key) and answers `rss` over IPC.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps } from '../../layers/core/src/deps.ts';
import { ensureBootstrap } from '../../layers/core/src/bootstrap.ts';
import { ensureTable } from '../../layers/core/src/store/create-table.ts';
import { startDynamoDBLocal } from '../../lambdas/local/dynamodb-local.ts';
import { startLocalServer } from '../../lambdas/local/server.ts';
import { toMb, type ReadyMessage, type RssMessage } from './protocol.ts';

const ddb = await startDynamoDBLocal({ dataDir: ':memory:' });
let stopping = false;
let closeServer: () => Promise<void> = () => Promise.resolve();

async function stop(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    // Never hang on the way out; exiting also SIGKILLs DynamoDB Local (its 'exit' hook).
    setTimeout(() => process.exit(code), 5_000).unref();
    await closeServer().catch(() => undefined);
    await ddb.stop().catch(() => undefined);
  }
  process.exit(code);
}
process.on('disconnect', () => void stop(0));
process.on('SIGTERM', () => void stop(0));
process.on('SIGINT', () => void stop(0));

try {
  const config = loadConfig({
    TABLE_NAME: 'gantry-bench',
    DYNAMODB_ENDPOINT: ddb.endpoint,
    AWS_REGION: 'local',
    GW_TRUSTED_CUSTOM_HOSTS: '127.0.0.1',
  });
  const client = new DynamoDBClient({
    endpoint: ddb.endpoint,
    region: config.region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  await ensureTable(client, config.tableName);
  client.destroy();

  const deps = createDeps(config);
  const boot = await ensureBootstrap(deps);
  if (!boot.createdAdminKey) throw new Error('bootstrap did not create an owner key on a fresh table');
  const server = await startLocalServer({ deps, mode: 'direct' });
  closeServer = async () => {
    await server.close();
    deps.upstream.close();
  };

  const res = await fetch(`${server.url}/v1/api-keys/workspace/service`, {
    method: 'POST',
    headers: { 'x-gw-api-key': boot.createdAdminKey, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', workspace_id: 'default', scopes: ['completions.write'] }),
  });
  const body = (await res.json()) as { key?: unknown };
  if (res.status !== 200 || typeof body.key !== 'string') throw new Error(`workspace key: ${res.status} ${JSON.stringify(body)}`);

  process.on('message', (m: unknown) => {
    if (typeof m === 'object' && m !== null && 'type' in m && m.type === 'rss') {
      const mem = process.memoryUsage();
      const reply: RssMessage = {
        type: 'rss',
        rssMb: toMb(mem.rss),
        heapUsedMb: toMb(mem.heapUsed),
        heapTotalMb: toMb(mem.heapTotal),
        externalMb: toMb(mem.external),
        maxRssMb: toMb(process.resourceUsage().maxRSS * 1024),
      };
      process.send?.(reply);
    }
  });
  const ready: ReadyMessage = { type: 'ready', url: server.url, apiKey: body.key };
  process.send?.(ready);
} catch (err) {
  console.error(err);
  await stop(1);
}
