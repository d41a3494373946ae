/**
 * The console's first load (what index.html pulls in) stays within 250 KB gzipped, its assets have
 * hashed names, and it has no inline script or style, so a strict CSP can be served with it.
 * dist/console/ is built by the browser lane's setup (test/support/console-setup.ts). Its API types
 * are the ones the OpenAPI document generates today (infra/console-api-types.ts).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CONSOLE_OUT } from '../../infra/local-build.ts';
import { API_TYPES_FILE, renderApiTypes, toType } from '../../infra/console-api-types.ts';
import { buildOpenApiDocument } from '../../layers/core/src/openapi/document.ts';

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

describe('console API types', () => {
  it('are what the OpenAPI document generates now (run `node infra/console-api-types.ts` when this fails)', async () => {
    expect(await readFile(API_TYPES_FILE, 'utf8')).toBe(renderApiTypes(buildOpenApiDocument()));
  });

  it('name the fields the API answers: the audit log answers uri and response_status_code, a prompt version prompt_description', async () => {
    const types = await readFile(API_TYPES_FILE, 'utf8');
    const audit = /export interface AuditView \{([\s\S]*?)\n\}/.exec(types)?.[1] ?? '';
    expect(audit).toMatch(/\buri: string;/);
    expect(audit).toMatch(/\bresponse_status_code: number \| null;/);
    expect(audit).not.toMatch(/\bpath:|\bstatus:|\bprincipal_id:/);
    expect(types).toMatch(/export interface PromptVersion \{[\s\S]*?prompt_description: string \| null;/);
  });

  it('render the JSON Schema zod writes as TypeScript', () => {
    const schema = {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The id' },
        kind: { type: 'string', enum: ['a', 'b'] },
        object: { const: 'thing' },
        size: { type: ['integer', 'null'] },
        tags: { type: 'array', items: { type: 'string' } },
        owner: { anyOf: [{ $ref: '#/components/schemas/UserView' }, { type: 'null' }] },
        extra: { type: 'object', additionalProperties: { type: 'number' } },
        'x-odd': { type: 'boolean' },
      },
      required: ['id', 'kind', 'object', 'size', 'tags', 'owner'],
      additionalProperties: false,
    };
    expect(toType(schema)).toBe(
      [
        '{',
        '  /** The id */',
        '  id: string;',
        '  kind: "a" | "b";',
        '  object: "thing";',
        '  size: number | null;',
        '  tags: string[];',
        '  owner: UserView | null;',
        '  extra?: {',
        '    [key: string]: number;',
        '  };',
        '  "x-odd"?: boolean;',
        '}',
      ].join('\n'),
    );
  });
});
