/**
 * Builds the local server (and the bench's Gantry) as one ESM bundle with the same esbuild settings
 * as the Lambda functions, so `npm start` runs what Lambda runs rather than TypeScript stripped at
 * load time (which costs about 60 MB of resident memory).
 */
import { build } from 'esbuild';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

import { REQUIRE_SHIM } from './lambda-code.ts';

export interface LocalBundle {
  entry: string;
  outfile: string;
}

export const LOCAL_BUNDLES: Record<string, LocalBundle> = {
  server: { entry: 'lambdas/local/main.ts', outfile: 'dist/local/main.mjs' },
  bench: { entry: 'test/bench/gantry-server.ts', outfile: 'dist/bench/gantry-server.mjs' },
};

/** The local server's log-ingest process, bundled beside each bundle (log-ingest-process.ts starts it). */
const INGEST_CHILD = 'lambdas/local/log-ingest-child.ts';

export async function buildBundle(bundle: LocalBundle): Promise<string> {
  const outfile = path.join(ROOT, bundle.outfile);
  await Promise.all([
    buildOne(path.join(ROOT, bundle.entry), outfile),
    buildOne(path.join(ROOT, INGEST_CHILD), path.join(path.dirname(outfile), 'log-ingest-child.mjs')),
  ]);
  return outfile;
}

async function buildOne(entry: string, outfile: string): Promise<void> {
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    minify: true,
    sourcemap: 'linked',
    mainFields: ['module', 'main'],
    banner: { js: REQUIRE_SHIM },
    logLevel: 'warning',
  });
}

// `node infra/local-build.ts [server|bench]`
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const names = process.argv.slice(2);
  for (const name of names.length ? names : ['server']) {
    const bundle = LOCAL_BUNDLES[name];
    if (!bundle) throw new Error(`unknown bundle "${name}"; known: ${Object.keys(LOCAL_BUNDLES).join(', ')}`);
    await buildBundle(bundle);
  }
}
