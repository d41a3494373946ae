/**
 * The local server's V8 heap flags (LOCAL_SERVER_NODE_FLAGS): the same on every start line that
 * runs the server, and they do bound the heap: a process that churns through short-lived objects,
 * as a gateway under load does, keeps a small young generation and collects its old one early.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCAL_SERVER_NODE_FLAGS } from '../../infra/local-build.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Allocates about 400 MB of garbage (request-sized objects, some kept briefly) and reports the heap spaces' sizes. */
const CHURN = `
const v8 = require('node:v8');
let keep = [];
for (let i = 0; i < 400_000; i++) {
  keep.push({ id: 'r' + i, headers: { a: 'x'.repeat(200) }, body: new Array(64).fill(i) });
  if (keep.length > 2_000) keep = [];
}
const size = (n) => v8.getHeapSpaceStatistics().find((s) => s.space_name === n).space_size / 1048576;
console.log(JSON.stringify({ young: size('new_space'), old: size('old_space') }));
`;

const churn = (flags: readonly string[]) => {
  const run = spawnSync(process.execPath, [...flags, '-e', CHURN], { encoding: 'utf8', timeout: 60_000 });
  expect(run.status, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as { young: number; old: number };
};

describe('local server heap flags', () => {
  it('are on the npm start line and on the container image command', () => {
    const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
    expect(start).toContain(`node --enable-source-maps ${LOCAL_SERVER_NODE_FLAGS.join(' ')} dist/local/main.mjs`);
    const cmd = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')
      .split('\n')
      .findLast((l) => l.startsWith('CMD '));
    expect(cmd).toBe(`CMD ${JSON.stringify(['node', '--enable-source-maps', ...LOCAL_SERVER_NODE_FLAGS, 'dist/local/main.mjs']).replaceAll(',', ', ')}`);
  });

  it('keep the young generation at 16 MB and the old one small where the defaults let both grow', () => {
    const bounded = churn(LOCAL_SERVER_NODE_FLAGS);
    expect(bounded.young).toBeLessThanOrEqual(16);
    expect(bounded.old).toBeLessThan(48);
    // The same churn with V8's defaults, so the test shows the flags are what bounds it.
    expect(churn([]).young).toBeGreaterThan(16);
  });
});
