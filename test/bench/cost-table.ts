/**
 * `node test/bench/cost-table.ts <bench.json>`: writes the cost table (cost.ts) made from a run of
 * `npm run bench` between the cost-table markers of README.md and docs/deploy.md, so both show the
 * same table from the same figures. `--print` prints it instead.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { costFigures, type LambdaCost } from './lambda-cost.ts';
import { costTable, replaceBetweenMarkers } from './cost.ts';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
export const TABLE_FILES = ['README.md', 'docs/deploy.md'];

/** The table for a bench report (its `lambda` section), naming where it comes from. */
export function tableFromReport(report: { lambda?: LambdaCost }, source: string): string {
  const lambda = report.lambda;
  if (!lambda?.handler?.no_policy) throw new Error(`${source} has no lambda figures of this bench (an incomplete or older run)`);
  return costTable(costFigures(lambda.handler, lambda.gateway_memory_mb, lambda.ingest_memory_mb), source);
}

if (process.argv[1] && path.resolve(process.argv[1]) === new URL(import.meta.url).pathname) {
  const args = process.argv.slice(2);
  const file = args.find((a) => !a.startsWith('--'));
  if (!file) {
    process.stderr.write('usage: node test/bench/cost-table.ts <bench.json> [--print]\n');
    process.exit(1);
  }
  // `npm run bench > file` puts npm's banner before the JSON.
  const text = readFileSync(file, 'utf8');
  const report = JSON.parse(text.slice(text.search(/^\{/m))) as Parameters<typeof tableFromReport>[0];
  const date = new Date().toISOString().slice(0, 10);
  // The share of the cores other work kept busy as the run began: figures from a busy machine read high.
  const busy = (report as { machine?: { other_cpu_busy?: { before?: number } } }).machine?.other_cpu_busy?.before;
  const table = tableFromReport(
    report,
    `a run of \`npm run bench\` (${date}${busy !== undefined ? `, machine ${Math.round(busy * 100)}% busy with other work` : ''})`,
  );
  if (args.includes('--print')) process.stdout.write(`${table}\n`);
  else {
    for (const name of TABLE_FILES) {
      const target = path.join(ROOT, name);
      writeFileSync(target, replaceBetweenMarkers(readFileSync(target, 'utf8'), table));
      process.stderr.write(`cost table written to ${name}\n`);
    }
  }
}
