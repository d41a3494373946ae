/**
 * docs/design/design.md states what the code decides, so it is checked against the code: its table
 * of performance budgets against the bench's own (test/bench/run.ts, `BUDGETS`), and its storage
 * table against the modules that declare table entities.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { read, ROOT } from './markdown.ts';

const DESIGN = read('docs/design/design.md');

/** The rows of the first table after `heading`: the cells of each, backticks kept. */
function tableAfter(heading: string): string[][] {
  const start = DESIGN.indexOf(`\n## ${heading}\n`);
  if (start === -1) throw new Error(`docs/design/design.md: no "## ${heading}"`);
  const rest = DESIGN.slice(start + 1);
  const section = rest.slice(0, rest.indexOf('\n## ') === -1 ? undefined : rest.indexOf('\n## '));
  return section
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|[-\s|]+\|$/.test(l))
    .slice(1)
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    );
}

/** `BUDGETS` of the bench (it runs on import, so it is read as text): name to limit. */
function benchBudgets(): Map<string, number> {
  const source = read('test/bench/run.ts');
  const body = /const BUDGETS = \{([\s\S]*?)\n\};/.exec(source)?.[1];
  if (!body) throw new Error('test/bench/run.ts: no BUDGETS');
  return new Map([...body.matchAll(/^\s*(\w+): ([\d_.]+),/gm)].map((m) => [m[1] as string, Number((m[2] as string).replaceAll('_', ''))]));
}

describe('docs/design/design.md', () => {
  it('lists every budget of the bench with its limit, and no other', () => {
    const budgets = benchBudgets();
    expect(budgets.size).toBeGreaterThan(5);
    const documented = new Map(tableAfter('Performance budgets').map(([name, limit]) => [String(name).replaceAll('`', ''), Number(limit)]));
    expect(documented).toEqual(budgets);
  });

  it('names every module that declares table entities in its storage table, and no other', () => {
    const walk = (dir: string): string[] =>
      readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? walk(`${dir}/${e.name}`) : e.name.endsWith('.ts') ? [`${dir}/${e.name}`] : [],
      );
    const core = 'layers/core/src';
    const declaring = walk(core)
      .filter((f) => /new Entity<|extends Entity<|versionedEntities</.test(read(f)) && !f.endsWith('/store/entity.ts'))
      .map((f) => f.slice(core.length + 1))
      .sort();
    const listed = tableAfter('Storage')
      .map(([module]) => String(module).replaceAll('`', ''))
      .sort();
    expect(listed).toEqual(declaring);
  });
});
