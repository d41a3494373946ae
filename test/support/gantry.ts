/** Starts a Gantry local server for a test file: fresh table, bootstrap, a workspace key. */
import type { CoreDeps, DepsOverrides } from '../../layers/core/src/deps.ts';
import { ensureBootstrap, type BootstrapResult } from '../../layers/core/src/bootstrap.ts';
import { startLocalServer, type LocalMode, type LocalServer } from '../../lambdas/local/server.ts';
import { createTestDeps } from './deps.ts';

export const ADMIN_KEY = 'gw_test-owner-key-0123456789abcdefghijklmnop';

export interface TestGantry {
  deps: CoreDeps;
  server: LocalServer;
  boot: BootstrapResult;
  url: string;
  /** An admin API call with the owner key (or the given key). */
  admin(method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; json: Record<string, unknown> }>;
  /** Creates a workspace key in the default workspace with these scopes. */
  workspaceKey(scopes?: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function startGantry(mode: LocalMode, env: Record<string, string> = {}, overrides: DepsOverrides = {}): Promise<TestGantry> {
  const deps = await createTestDeps(env, overrides);
  const boot = await ensureBootstrap(deps, ADMIN_KEY);
  const server = await startLocalServer({ deps, mode });
  const admin: TestGantry['admin'] = async (method, path, body, key = ADMIN_KEY) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { 'x-gw-api-key': key, 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  return {
    deps,
    server,
    boot,
    url: server.url,
    admin,
    async workspaceKey(scopes = ['completions.write']) {
      const res = await admin('POST', '/v1/api-keys/workspace/service', { name: 'test', workspace_id: 'default', scopes });
      if (res.status !== 200) throw new Error(`workspace key: ${res.status} ${JSON.stringify(res.json)}`);
      return res.json.key as string;
    },
    async close() {
      await server.close();
      deps.upstream.close();
    },
  };
}
