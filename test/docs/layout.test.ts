/**
 * The repository has one map of its folders, in docs/architecture.md ("Layout"), and it is true:
 * every folder it names exists, and every folder directly under the core, the functions and the
 * CDK app is named in it, so a new one cannot go unmapped. README.md and CONTRIBUTING.md link to
 * it rather than draw maps of their own.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeBlocks, read, ROOT } from './markdown.ts';

/** Folders whose every subfolder the map must name. */
const COMPLETE = ['layers/core/src', 'lambdas', 'lambdas/workers', 'infra'];

/** One line of the map: folders (`a/ b/`), then two or more spaces and what they hold. */
const MAP_LINE = /^( *)((?:[\w.-]+\/)+(?: (?:[\w.-]+\/)+)*)(?: {2,}\S.*)?$/;

interface Mapped {
  folder: string;
  line: string;
}

/** The map's folders, each resolved against the line above it with less indentation. */
function parseMap(map: string): { folders: Mapped[]; problems: string[] } {
  const folders: Mapped[] = [];
  const problems: string[] = [];
  const parents: { indent: number; folder: string | undefined }[] = [];
  for (const line of map.split('\n')) {
    if (line.trim() === '') continue;
    const m = MAP_LINE.exec(line);
    if (!m) {
      problems.push(`not a map line ("folder/  what it holds"): ${line}`);
      continue;
    }
    const indent = (m[1] as string).length;
    while (parents.length && (parents.at(-1) as { indent: number }).indent >= indent) parents.pop();
    const parent = parents.at(-1);
    if (parent && parent.folder === undefined) problems.push(`nested under a line naming several folders: ${line}`);
    const names = (m[2] as string).split(' ').map((n) => n.replace(/\/$/, ''));
    for (const name of names) folders.push({ folder: path.posix.join(parent?.folder ?? '', name), line: line.trim() });
    parents.push({ indent, folder: names.length === 1 ? path.posix.join(parent?.folder ?? '', names[0] as string) : undefined });
  }
  return { folders, problems };
}

function layoutMap(): string {
  const text = read('docs/architecture.md');
  const section = text.slice(text.indexOf('\n## Layout\n'));
  const block = codeBlocks(section.slice(0, section.indexOf('\n## ', 1)))[0];
  if (!block) throw new Error('docs/architecture.md: no code block under "## Layout"');
  return block.code;
}

const isDir = (rel: string): boolean => {
  try {
    return statSync(path.join(ROOT, rel)).isDirectory();
  } catch {
    return false;
  }
};

describe('the layout map (docs/architecture.md#layout)', () => {
  const { folders, problems } = parseMap(layoutMap());
  const named = new Set(folders.map((f) => f.folder));

  it('is made of folder lines only', () => {
    expect(problems).toEqual([]);
    expect(named).toContain('layers/core/src');
  });

  it('names only folders that exist', () => {
    const missing = folders.filter((f) => !isDir(f.folder)).map((f) => `${f.folder} (${f.line})`);
    expect(missing).toEqual([]);
  });

  it.each(COMPLETE)('names every folder directly under %s/', (dir) => {
    const subfolders = readdirSync(path.join(ROOT, dir), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `${dir}/${e.name}`);
    expect(subfolders.length).toBeGreaterThan(0);
    expect(subfolders.filter((f) => !named.has(f))).toEqual([]);
  });
});

describe('one map only', () => {
  it.each(['README.md', 'CONTRIBUTING.md'])('%s links to the map and draws none of its own', (page) => {
    const text = read(page);
    expect(text).toContain('docs/architecture.md#layout');
    const maps = codeBlocks(text).filter((b) => b.code.split('\n').filter((l) => /^ *(?:[\w.-]+\/)+ {2,}\S/.test(l)).length >= 3);
    expect(maps.map((b) => b.code.split('\n')[0])).toEqual([]);
  });
});
