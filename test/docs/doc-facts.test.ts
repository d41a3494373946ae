/**
 * The documentation states facts the code decides: how many providers (and of which kind), stacks
 * and catalog models there are. Every such number in README.md and docs/*.md is checked against the
 * code, so a doc cannot drift from it. (That every link resolves is test/docs/references.test.ts.)
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { catalogModels, catalogProviders } from '../../layers/core/src/pricing/catalog.ts';
import { allProviders, providersServing } from '../../layers/core/src/providers/registry.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DOCS = ['README.md', 'CONTRIBUTING.md', ...readdirSync(path.join(ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'));
const text = (file: string) => readFileSync(path.join(ROOT, file), 'utf8').replace(/\s+/g, ' ');

const WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'];
const numberOf = (s: string) => (/^\d+$/.test(s) ? Number(s) : WORDS.indexOf(s.toLowerCase()));

/** The stacks `infra/app-builder.ts` adds to the app, by id. */
const stackIds = [...readFileSync(path.join(ROOT, 'infra/app-builder.ts'), 'utf8').matchAll(/new \w+Stack\(app, '([^']+)'/g)].map((m) => m[1] as string);

const providers = allProviders();
const withEndpoints = providers.filter((p) => Object.keys(p.endpoints).length > 0);

/** A phrase stating a number (its first group), and the number the code gives. */
const FACTS: { what: string; pattern: RegExp; value: number }[] = [
  { what: 'providers in all', pattern: /(?:knows|In all,|makes) (\d+) providers/g, value: providers.length },
  { what: 'chat providers', pattern: /(\d+) (?:through|serve|reachable through) the unified chat endpoint/g, value: providersServing('chatComplete').length },
  { what: 'embeddings providers', pattern: /(\d+) (?:through )?embeddings/g, value: providersServing('embed').length },
  { what: 'OpenAI-wire providers', pattern: /(\d+) OpenAI-wire providers/g, value: withEndpoints.filter((p) => !p.native).length },
  { what: 'native transforms', pattern: /native transforms for (\d+) more/g, value: withEndpoints.filter((p) => p.native).length },
  { what: 'passthrough-only providers', pattern: /(\d+) reached through the passthrough/g, value: providers.length - withEndpoints.length },
  { what: 'stacks', pattern: /has (\w+) stacks/g, value: stackIds.length },
  { what: 'catalog models', pattern: /catalog of (\d+) models/g, value: catalogModels().length },
  { what: 'catalog providers', pattern: /\d+ models across (\d+) providers/g, value: catalogProviders().length },
];

describe('numbers in the docs', () => {
  it.each(FACTS)('$what: every statement equals the code', ({ pattern, value }) => {
    const found = DOCS.flatMap((file) => [...text(file).matchAll(pattern)].map((m) => ({ file, phrase: m[0], n: numberOf(m[1] as string) })));
    expect(found.length, `no doc states it (${pattern})`).toBeGreaterThan(0);
    for (const f of found) expect(f.n, `${f.file}: "${f.phrase}"`).toBe(value);
  });

  it('a lower bound ("300+ models") does not overstate the catalog', () => {
    const bounds = DOCS.flatMap((file) => [...text(file).matchAll(/(\d+)\+ models/g)].map((m) => Number(m[1])));
    expect(bounds.length).toBeGreaterThan(0);
    for (const b of bounds) expect(b).toBeLessThanOrEqual(catalogModels().length);
  });

  it('the README lists every stack the app builds, and no other', () => {
    const listed = [...readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/^- `(Gantry-[A-Za-z]+)`/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...stackIds].sort());
  });

  it('documents every provider of the registry by its id', () => {
    const providerDocs = text('docs/providers.md') + text('docs/native-providers.md');
    for (const p of providers) expect(providerDocs, p.id).toContain(`\`${p.id}\``);
  });
});
