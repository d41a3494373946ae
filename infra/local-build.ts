/**
 * Builds the local server (and the bench's Gantry) as one ESM bundle with the same esbuild settings
 * as the Lambda functions, so `npm start` runs what Lambda runs rather than TypeScript stripped at
 * load time (which costs about 60 MB of resident memory).
 */
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
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
  // The Fargate realtime relay's entry point, in the same image as the server (docs/realtime.md).
  relay: { entry: 'lambdas/realtime/relay-main.ts', outfile: 'dist/relay/main.mjs' },
};

/**
 * V8 heap flags of the local server (`npm start`, the container image, the bench's Gantry). Under
 * load V8's defaults grow the young generation to 128 MB and let dead objects pile up in the old
 * generation until its first collection near 100 MB, while the live heap is about 26 MB: RSS went
 * from 133 MB idle to 300+ MB and stayed there. A 16 MB young generation (8 MB semi-spaces), a first
 * old-generation collection at 32 MB and a 1.5x growth factor keep it near 170 MB, for about 5%
 * more CPU per request (docs/architecture.md). No hard cap: a large live heap still grows.
 */
export const LOCAL_SERVER_NODE_FLAGS = ['--max-semi-space-size=8', '--initial-old-space-size=32', '--heap-growing-percent=50'] as const;

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

export const CONSOLE_SOURCE = path.join(ROOT, 'console');
export const CONSOLE_OUT = path.join(ROOT, 'dist/console');
const CONSOLE_STAMP = path.join(CONSOLE_OUT, '.source-hash');

/** Core files the console bundles itself (the pricing page shows the model catalog the gateway prices with). */
const CONSOLE_CORE_INPUTS = ['layers/core/src/pricing/catalog.ts', 'layers/core/src/pricing/catalog-data.ts'];

/** A hash of every console source file, the core files it bundles and the lockfile (Preact, Vite), so a build is skipped when nothing changed. */
export async function consoleSourceHash(): Promise<string> {
  const hash = createHash('sha256').update(await readFile(path.join(ROOT, 'package-lock.json')));
  for (const file of CONSOLE_CORE_INPUTS) hash.update(file).update(await readFile(path.join(ROOT, file)));
  const files = (await readdir(CONSOLE_SOURCE, { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile())
    .map((d) => path.join(d.parentPath, d.name))
    .sort();
  for (const file of files) hash.update(path.relative(CONSOLE_SOURCE, file)).update(await readFile(file));
  return hash.digest('hex');
}

/**
 * The admin console (Preact, built by Vite) into dist/console/, served at /console/. Hashed asset
 * names and no inline script, so a strict CSP (`script-src 'self'`) holds. `ifChanged` skips the
 * build when the sources hash to the stamp the last build left.
 */
export async function buildConsole(opts: { ifChanged?: boolean } = {}): Promise<string> {
  const sourceHash = await consoleSourceHash();
  if (opts.ifChanged && (await readFile(CONSOLE_STAMP, 'utf8').catch(() => '')) === sourceHash && existsSync(path.join(CONSOLE_OUT, 'index.html')))
    return CONSOLE_OUT;
  const { build: viteBuild } = await import('vite');
  await viteBuild({
    configFile: false,
    root: CONSOLE_SOURCE,
    base: '/console/',
    logLevel: 'warn',
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: { outDir: CONSOLE_OUT, emptyOutDir: true, target: 'es2022', assetsInlineLimit: 0, modulePreload: { polyfill: false } },
  });
  await writeFile(CONSOLE_STAMP, sourceHash);
  return CONSOLE_OUT;
}

// `node infra/local-build.ts [server|bench|relay|console]`
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const names = process.argv.slice(2);
  for (const name of names.length ? names : ['server']) {
    if (name === 'console') {
      // Unchanged sources keep the last build: `npm start` stays quick, and a running server's files stay put.
      await buildConsole({ ifChanged: true });
      continue;
    }
    const bundle = LOCAL_BUNDLES[name];
    if (!bundle) throw new Error(`unknown bundle "${name}"; known: ${Object.keys(LOCAL_BUNDLES).join(', ')}`);
    await buildBundle(bundle);
  }
}
