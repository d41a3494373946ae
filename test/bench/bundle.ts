/**
 * The gateway function as Lambda gets it (built by infra/lambda-code.ts, as `cdk synth` builds it):
 * the code a cold start loads, everything emitted, and how long a fresh Node process takes to
 * import it (median of several), for the 250 KB and 80 ms budgets (docs/design/design.md#performance-budgets).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildLambda, bundleSizes, ROOT } from '../../infra/lambda-code.ts';

export interface BundleResult {
  eager_kb: number;
  total_kb: number;
  cold_import_ms: { runs: number; median: number; max: number };
}

const kb = (bytes: number) => Math.round((bytes / 1024) * 10) / 10;

export function benchGatewayBundle(runs = 7): BundleResult {
  // Inside the project, so the external AWS SDK resolves from node_modules as the runtime provides it.
  mkdirSync(path.join(ROOT, 'dist'), { recursive: true });
  const outdir = mkdtempSync(path.join(ROOT, 'dist', 'gateway-bundle-'));
  try {
    const meta = buildLambda('lambdas/gateway/handler.ts', outdir);
    const sizes = bundleSizes(meta, outdir);
    // The runtime defines `awslambda` before the handler module loads; so does this probe.
    const probe = path.join(outdir, 'probe.mjs');
    writeFileSync(
      probe,
      `globalThis.awslambda = { streamifyResponse: (f) => f, HttpResponseStream: { from: (s) => s } };
const t = process.hrtime.bigint();
await import(${JSON.stringify(pathToFileURL(path.join(outdir, 'index.mjs')).href)});
process.stdout.write(String(Number(process.hrtime.bigint() - t) / 1e6));`,
    );
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const out = execFileSync(process.execPath, [probe], { env: { ...process.env, TABLE_NAME: 'bench', AWS_REGION: 'us-east-1' } });
      times.push(Number(out.toString()));
    }
    times.sort((a, b) => a - b);
    return {
      eager_kb: kb(sizes.eagerBytes),
      total_kb: kb(sizes.totalBytes),
      cold_import_ms: { runs, median: Math.round((times[Math.floor(runs / 2)] ?? NaN) * 10) / 10, max: Math.round((times.at(-1) ?? NaN) * 10) / 10 },
    };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

// `node test/bench/bundle.ts`: just this measurement.
if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  process.stdout.write(`${JSON.stringify(benchGatewayBundle(), null, 2)}\n`);
}
