/**
 * The gateway bundle keeps to zod/mini: classic zod's schema methods cannot be tree-shaken, and
 * they would cost about 65 KB of the 250 KB budget (docs/design/design.md#performance-budgets) (CONTRIBUTING, "zod").
 */
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';

const HANDLER = fileURLToPath(new URL('../../../lambdas/gateway/handler.ts', import.meta.url));

describe('gateway bundle', () => {
  let meta: Metafile;

  beforeAll(async () => {
    const result = await build({
      entryPoints: [HANDLER],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node24',
      external: ['@aws-sdk/*'],
      metafile: true,
      write: false,
      logLevel: 'silent',
    });
    meta = result.metafile;
  });

  it('has no module of ours that imports classic zod', () => {
    const importers = Object.entries(meta.inputs)
      .filter(([input, { imports }]) => !input.includes('node_modules/') && imports.some((i) => i.original === 'zod'))
      .map(([input]) => input);
    expect(importers).toEqual([]);
  });

  it('contains none of classic zod', () => {
    expect(Object.keys(meta.inputs).filter((input) => input.includes('zod/v4/classic/'))).toEqual([]);
  });
});
