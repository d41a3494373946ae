/**
 * The layer rule of docs/design/design.md#layers: every import inside the core points down (or
 * within its layer), never back up, and the core never imports the runtimes, the infrastructure,
 * the console or the tests. A new violation fails with the importing file and the imported one.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { init, parse } from 'es-module-lexer';
import { describe, expect, it } from 'vitest';

const CORE = fileURLToPath(new URL('../../../layers/core/src/', import.meta.url));

/**
 * Top to bottom. A unit is a folder directly under layers/core/src, or a file at its root. A module
 * may import its own unit, its own layer, and every layer below.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['deps.ts', 'bootstrap.ts', 'app.ts', 'local-adapters.ts'], // composition roots
  ['admin', 'openapi'], // the admin API and the document describing every route
  ['gateway', 'batches', 'mcp'], // the request surfaces
  ['observability', 'guardrails', 'policy', 'pricing', 'prompts', 'secrets'], // the services hooks and routes use
  ['kernel'], // the contracts between them: the request record, hooks, principal, usage, routing
  ['store'], // the table, entities and repositories
  ['providers'], // provider declarations
  ['security', 'ports'], // SSRF guard and redaction; interfaces to the outside and their adapters
  ['http', 'config.ts'], // errors, bodies, JSON; the configuration
];

/**
 * The exceptions, each with its reason. Keep this list short: a new entry needs a reason a
 * reviewer accepts, not a way around the rule.
 */
const EXCEPTIONS: readonly { target: string; typeOnly: true; reason: string }[] = [
  {
    target: 'deps.ts',
    typeOnly: true,
    reason:
      'CoreDeps, the composition root\'s type, is still what most services and routes take (the "service locator" of issue #31); ' +
      'a type-only import adds nothing to a bundle. Modules narrowed to the ports they use no longer import it.',
  },
];

const rank = new Map<string, number>(LAYERS.flatMap((units, i) => units.map((u) => [u, i] as const)));

function unitOf(file: string): string {
  const rel = path.relative(CORE, file).split(path.sep);
  return rel[0] ?? '';
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith('.ts') ? [full] : [];
  });
}

interface Arrow {
  from: string;
  to: string;
  typeOnly: boolean;
}

// `import type`, `export type ... from` and `import('...')` in a type: what type stripping erases.
const TYPE_IMPORT = /\b(?:import|export)\s+type\s[^;]*?\sfrom\s+'([^']+)'|\bimport\('([^']+)'\)\./g;

/**
 * Every relative import, export-from and dynamic import of a file, with whether it is types only:
 * the runtime arrows are those left after Node strips the types (what a bundle follows), the rest
 * are the type arrows.
 */
/** What a file imports once Node strips its types: what a bundle follows. */
function runtimeImportsOf(source: string): Set<string> {
  const [imports] = parse(stripTypeScriptTypes(source));
  return new Set(imports.map((i) => i.n).filter((n): n is string => n !== undefined));
}

function arrowsOf(file: string): Arrow[] {
  const source = readFileSync(file, 'utf8');
  const runtime = runtimeImportsOf(source);
  const types = new Set([...source.matchAll(TYPE_IMPORT)].map((m) => m[1] ?? m[2] ?? '').filter((n) => !runtime.has(n)));
  const arrow = (spec: string, typeOnly: boolean): Arrow => ({ from: file, to: path.resolve(path.dirname(file), spec), typeOnly });
  const relative = (spec: string) => spec.startsWith('./') || spec.startsWith('../');
  return [...[...runtime].filter(relative).map((s) => arrow(s, false)), ...[...types].filter(relative).map((s) => arrow(s, true))];
}

await init;
const files = sourceFiles(CORE);
const arrows = files.flatMap(arrowsOf);
const show = (a: Arrow) => `${path.relative(CORE, a.from)} -> ${path.relative(CORE, a.to)}${a.typeOnly ? ' (types)' : ''}`;

describe('the layer rule', () => {
  it('places every unit of the core in a layer', () => {
    const units = new Set(files.map(unitOf));
    expect([...units].filter((u) => !rank.has(u)).sort()).toEqual([]);
  });

  it('keeps the core free of the runtimes, the infrastructure, the console and the tests', () => {
    const outside = arrows.filter((a) => path.relative(CORE, a.to).startsWith('..'));
    expect(outside.map(show)).toEqual([]);
  });

  it('points every import down or within its layer', () => {
    const up = arrows.filter((a) => {
      const from = rank.get(unitOf(a.from));
      const to = rank.get(unitOf(a.to));
      if (from === undefined || to === undefined || to >= from) return false;
      return !EXCEPTIONS.some((e) => unitOf(a.to) === e.target && (!e.typeOnly || a.typeOnly));
    });
    expect(up.map(show)).toEqual([]);
  });

  it('keeps DynamoDB in store/ and ports/: nothing else sends it a command (docs/design/design.md#storage)', () => {
    const dynamo = (spec: string) => spec === '@aws-sdk/lib-dynamodb' || spec === '@aws-sdk/client-dynamodb';
    const users = files.filter((f) => [...runtimeImportsOf(readFileSync(f, 'utf8'))].some(dynamo)).map((f) => path.relative(CORE, f).split(path.sep).join('/'));
    expect(users.filter((f) => !/^(store|ports)\//.test(f))).toEqual([]);
    // The rule sees the imports it judges: the store's own.
    expect(users).toContain('store/paginate.ts');
  });

  it('finds the arrows it judges (a rule that sees nothing passes for nothing)', () => {
    const kernelUsers = new Set(arrows.filter((a) => unitOf(a.to) === 'kernel').map((a) => unitOf(a.from)));
    for (const unit of ['gateway', 'policy', 'guardrails', 'pricing', 'observability']) expect(kernelUsers).toContain(unit);
    expect(arrows.some((a) => unitOf(a.to) === 'deps.ts' && a.typeOnly)).toBe(true);
  });
});
