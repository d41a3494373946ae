/**
 * Builds a Lambda function's code with esbuild: ESM, minified, Node 24, the AWS SDK bundled, and
 * code splitting, so that what a request rarely needs (native providers, JWT
 * verification ...) sits in chunks imported on first use instead of in the cold-start code.
 * CDK's NodejsFunction cannot split, so functions use this through `Code.fromAsset` with local
 * bundling; the bench builds the same way to measure the gateway bundle.
 */
import { buildSync, type BuildOptions, type Metafile } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, DockerImage } from 'aws-cdk-lib';
import { Code } from 'aws-cdk-lib/aws-lambda';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

// The ESM bundle still contains CommonJS dependencies that call require(); give them one.
export const REQUIRE_SHIM = "import { createRequire } from 'module'; const require = createRequire(import.meta.url);";

/** The handler a function built by `lambdaCode` exports: `index.mjs`, export `handler`. */
export const LAMBDA_HANDLER = 'index.handler';

export const LAMBDA_BUILD_OPTIONS: BuildOptions = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  minify: true,
  splitting: true,
  mainFields: ['module', 'main'],
  // Nothing is left to the runtime: the AWS SDK the nodejs24.x runtime ships changes version
  // under a deployed function, and a bundle built against a newer one can fail to import
  // (`@aws-sdk/core/util` is missing below 3.974.9). Bundled, each function carries the exact
  // versions it was tested with; rarely used clients sit in lazily imported chunks.
  external: [],
  banner: { js: REQUIRE_SHIM },
  entryNames: 'index',
  chunkNames: 'chunks/[name]-[hash]',
  outExtension: { '.js': '.mjs' },
  legalComments: 'none',
  logLevel: 'warning',
};

/** Builds `entry` (relative to the repository root) into `outdir`; returns esbuild's metafile. */
export function buildLambda(entry: string, outdir: string): Metafile {
  const result = buildSync({ ...LAMBDA_BUILD_OPTIONS, entryPoints: [path.join(ROOT, entry)], outdir, metafile: true });
  return result.metafile as Metafile;
}

export interface BundleSizes {
  /** The entry plus every chunk it imports statically: what a cold start loads. */
  eagerBytes: number;
  /** Everything emitted, lazily imported chunks included. */
  totalBytes: number;
}

export function bundleSizes(meta: Metafile, outdir: string): BundleSizes {
  const outputs = meta.outputs;
  const key = (p: string) => path.relative(process.cwd(), path.resolve(p));
  const entry = Object.keys(outputs).find((o) => path.basename(o) === 'index.mjs' && path.resolve(o).startsWith(path.resolve(outdir)));
  let eager = 0;
  let total = 0;
  for (const [name, out] of Object.entries(outputs)) if (name.endsWith('.mjs')) total += out.bytes;
  const seen = new Set<string>();
  const visit = (name: string) => {
    const k = key(name);
    if (seen.has(k)) return;
    seen.add(k);
    const out = outputs[name] ?? outputs[k];
    if (!out) return;
    eager += out.bytes;
    for (const imp of out.imports) if (imp.kind === 'import-statement' && !imp.external) visit(imp.path);
  };
  if (entry) visit(entry);
  return { eagerBytes: eager, totalBytes: total };
}

/** Files copied beside the bundle: from (relative to the repository root) -> to (relative to the code). */
export type LambdaAssets = Readonly<Record<string, string>>;

/** Builds `entry` and copies `assets` into the same directory. */
export function buildLambdaWithAssets(entry: string, outdir: string, assets: LambdaAssets = {}): Metafile {
  const meta = buildLambda(entry, outdir);
  for (const [from, to] of Object.entries(assets)) {
    const target = path.join(outdir, to);
    mkdirSync(path.dirname(target), { recursive: true });
    copyFileSync(path.join(ROOT, from), target);
  }
  return meta;
}

/** Lambda code for `entry` (and its static assets), built locally at synth (no Docker). */
export function lambdaCode(entry: string, assets: LambdaAssets = {}): Code {
  return Code.fromAsset(path.join(ROOT, path.dirname(entry)), {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Required by the API; local bundling always succeeds, so the image is never pulled.
      image: DockerImage.fromRegistry('public.ecr.aws/docker/library/node:24'),
      local: {
        tryBundle(outputDir: string): boolean {
          buildLambdaWithAssets(entry, outputDir, assets);
          return true;
        },
      },
    },
  });
}
