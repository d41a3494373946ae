/**
 * The console's first load (what index.html pulls in) stays within 250 KB gzipped, its assets have
 * hashed names, and it has no inline script or style, so a strict CSP can be served with it.
 * dist/console/ is built by the browser lane's setup (test/support/console-setup.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CONSOLE_OUT } from '../../infra/local-build.ts';

const BUDGET = 250 * 1024;

describe('console bundle', () => {
  it('loads at most 250 KB gzipped on first load, from hashed assets under /console/', async () => {
    const html = await readFile(path.join(CONSOLE_OUT, 'index.html'), 'utf8');
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(refs.length).toBeGreaterThanOrEqual(2);
    let total = 0;
    for (const ref of refs) {
      expect(ref).toMatch(/^\/console\/assets\/[\w.-]+-[\w-]{8}\.(js|css)$/);
      total += gzipSync(await readFile(path.join(CONSOLE_OUT, ref.slice('/console/'.length)))).length;
    }
    expect(total).toBeGreaterThan(1024);
    expect(total).toBeLessThanOrEqual(BUDGET);
  });

  it('has no inline script or style in its page', async () => {
    const html = await readFile(path.join(CONSOLE_OUT, 'index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      expect(attrs).toContain('src=');
      expect(body?.trim()).toBe('');
    }
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
  });
});
