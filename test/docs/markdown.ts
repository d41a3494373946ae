/** What the doc tests read from markdown: the pages, their headings' anchors, their links and code blocks. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

export const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');

/** README.md, CONTRIBUTING.md and every page under docs/, as paths from the repository's root. */
export function markdownPages(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) return walk(rel);
      return e.name.endsWith('.md') ? [rel] : [];
    });
  return ['README.md', 'CONTRIBUTING.md', ...walk('docs')];
}

/** The page's lines, with those inside fenced code blocks blanked (a `# comment` in a shell block is no heading). */
export function proseLines(text: string): string[] {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      if (open !== undefined && open[0] === fence[0] && open.length >= fence.length) fence = undefined;
      return '';
    }
    if (open !== undefined) {
      fence = open;
      return '';
    }
    return line;
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, each space a hyphen. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/ /g, '-');
}

/** Every anchor the page's headings make, duplicates numbered as GitHub numbers them. */
export function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** The targets of the page's inline links and images, outside code. */
export function linkTargets(text: string): string[] {
  const prose = proseLines(text)
    .join('\n')
    .replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
}

/** The fenced code blocks of a page, with their info string and the line before the fence. */
export function codeBlocks(text: string): { lang: string; code: string; before: string }[] {
  const lines = text.split('\n');
  const out: { lang: string; code: string; before: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(\S*)\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const indent = (open[1] as string).length;
    const fence = open[2] as string;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !new RegExp(`^\\s*${fence}\\s*$`).test(lines[j] as string); j++) body.push((lines[j] as string).slice(indent));
    let k = i - 1;
    while (k >= 0 && (lines[k] as string).trim() === '') k--;
    out.push({ lang: open[3] as string, code: body.join('\n'), before: k >= 0 ? (lines[k] as string).trim() : '' });
    i = j;
  }
  return out;
}
