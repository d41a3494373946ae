/**
 * The container image (Dockerfile, compose.yaml): built and run where a container engine answers,
 * skipped otherwise (the engine is a machine's, not the project's). The running image serves health
 * on 0.0.0.0 inside the container, runs as a non-root user, reports healthy, keeps its data in the
 * volume across a restart, and stops on `docker stop` with status 0.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../lambdas/local/dynamodb-local.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const docker = (...args: string[]) => spawnSync('docker', args, { cwd: ROOT, encoding: 'utf8', timeout: 900_000 });
const hasDocker = docker('info').status === 0;
const IMAGE = `gantry-test:${process.pid}`;
const KEY = 'gw_container-test-owner-key-00000000000001';

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (
      await Promise.resolve()
        .then(check)
        .catch(() => false)
    )
      return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.runIf(hasDocker)('container image', () => {
  const containers: string[] = [];
  const volume = `gantry-test-${process.pid}`;
  afterAll(() => {
    for (const c of containers) docker('rm', '-f', c);
    docker('volume', 'rm', '-f', volume);
    docker('image', 'rm', '-f', IMAGE);
  });

  it('validates compose.yaml', () => {
    const config = docker('compose', 'config', '--quiet');
    expect(config.status, config.stderr).toBe(0);
  });

  it('builds, runs as a service and keeps its data in the volume', async () => {
    const build = docker('build', '-t', IMAGE, '.');
    expect(build.status, build.stderr.slice(-4000)).toBe(0);
    expect(docker('run', '--rm', '--entrypoint', 'id', IMAGE, '-u').stdout.trim()).not.toBe('0');

    const run = async () => {
      const port = await freePort();
      const started = docker('run', '-d', '--init', '-p', `127.0.0.1:${port}:8787`, '-v', `${volume}:/data`, '-e', `GW_BOOTSTRAP_ADMIN_KEY=${KEY}`, IMAGE);
      expect(started.status, started.stderr).toBe(0);
      const id = started.stdout.trim();
      containers.push(id);
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/v1/health`)).ok, 'health', 120_000);
      return { id, port };
    };
    const first = await run();
    const created = await fetch(`http://127.0.0.1:${first.port}/v1/api-keys/workspace/service`, {
      method: 'POST',
      headers: { 'x-gw-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'kept', workspace_id: 'default', scopes: ['completions.write'] }),
    });
    const { id: keyId } = (await created.json()) as { id: string };
    await waitFor(() => docker('inspect', '--format', '{{.State.Health.Status}}', first.id).stdout.trim() === 'healthy', 'the health check', 60_000);
    expect(docker('stop', first.id).status).toBe(0);
    expect(docker('inspect', '--format', '{{.State.ExitCode}}', first.id).stdout.trim()).toBe('0');

    // The organisation and key made by the first start are still there.
    const second = await run();
    const keys = await fetch(`http://127.0.0.1:${second.port}/v1/api-keys`, { headers: { 'x-gw-api-key': KEY } });
    expect(keys.status).toBe(200);
    expect(((await keys.json()) as { data: { id: string }[] }).data.map((k) => k.id)).toContain(keyId);
    expect(docker('stop', second.id).status).toBe(0);
  }, 900_000);
});
