/**
 * Every reference resolves inside the repository. Each relative link of README.md, CONTRIBUTING.md
 * and the pages under docs/ names a file of the repository, and a `#section` of a markdown page
 * names one of its headings; each markdown page a source or test file cites (a comment's
 * `docs/design/spec.md#error-codes`) exists, with the section it names; and nothing points at
 * design notes or a specification kept outside the repository.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, linkTargets, markdownPages, read, ROOT } from './markdown.ts';

const PAGES = markdownPages();

/** The anchors of a markdown file, read once. */
const anchorCache = new Map<string, Set<string>>();
const anchorsOf = (abs: string): Set<string> => {
  let found = anchorCache.get(abs);
  if (!found) anchorCache.set(abs, (found = anchors(read(path.relative(ROOT, abs)))));
  return found;
};

/** Why `target` (a path, maybe with `#anchor`) does not resolve from `fromDir`, or undefined when it does. */
function unresolved(fromDirs: string[], target: string): string | undefined {
  const [file = '', anchor] = target.split('#', 2);
  const candidates = file === '' ? [] : fromDirs.map((dir) => path.resolve(dir, decodeURIComponent(file)));
  const abs = candidates.find((c) => c.startsWith(ROOT + path.sep) && existsSync(c));
  if (!abs) return 'no such file in the repository';
  if (anchor && abs.endsWith('.md') && !anchorsOf(abs).has(anchor)) return `no heading makes #${anchor} there`;
  return undefined;
}

/** Source and test files whose comments cite pages (the console's sources too). */
function sourceFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) return e.name === 'node_modules' ? [] : walk(rel);
      return /\.tsx?$/.test(e.name) ? [rel] : [];
    });
  return ['infra', 'lambdas', 'layers', 'test', 'console/src'].flatMap(walk);
}

/** A `.md` path as code cites it; not a URI's path (`file:///readme.md`) nor a glob (`docs/*.md`). */
const MD_CITATION = /(?<![\w/.:*-])((?:[\w.-]+\/)*[\w.-]+\.md)(?:#([\w-]+))?/g;

/** Names of notes that lived outside the repository; a reference to one can never resolve here. */
const OUTSIDE = /\/work\/shared\b|\bshared\/(?:spec|reference)\/|\bSPEC(?:\.md)?\b|\bDESIGN\.md\b|gateway-behaviour/;

describe('links of the documentation', () => {
  it.each(PAGES)('%s: every relative link names a file and a heading of the repository', (page) => {
    const text = read(page);
    const dir = path.dirname(path.join(ROOT, page));
    const broken: string[] = [];
    for (const target of linkTargets(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      if (target.startsWith('#')) {
        if (!anchors(text).has(target.slice(1))) broken.push(`${target}: no heading makes it`);
        continue;
      }
      const why = unresolved([dir], target);
      if (why) broken.push(`${target}: ${why}`);
    }
    expect(broken, page).toEqual([]);
  });

  it.each(PAGES)('%s refers to no design notes or specification outside the repository', (page) => {
    expect(read(page)).not.toMatch(OUTSIDE);
  });
});

describe('pages the code cites', () => {
  const files = sourceFiles();

  it('finds the files it checks', () => {
    expect(files).toContain('layers/core/src/http/errors.ts');
    expect(files.length).toBeGreaterThan(300);
  });

  it('every .md page a .ts file names exists in the repository, with the section it names', () => {
    const broken: string[] = [];
    for (const file of files) {
      const text = read(file);
      const fromDirs = [ROOT, path.dirname(path.join(ROOT, file))];
      for (const m of text.matchAll(MD_CITATION)) {
        const cited = m[2] ? `${m[1]}#${m[2]}` : (m[1] as string);
        const why = unresolved(fromDirs, cited);
        if (why) broken.push(`${file}: ${cited}: ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('no .ts file cites design notes or a specification outside the repository', () => {
    // This file names them, to refuse them.
    const offenders = files.filter((file) => file !== 'test/docs/references.test.ts' && OUTSIDE.test(read(file)));
    expect(offenders).toEqual([]);
  });
});
