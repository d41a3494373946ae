/**
 * The admin console in a real Chromium (playwright-core) against the local server: sign in with
 * the admin key, create a key (show-once), a gateway request in logs and on the overview chart, a
 * config edited, versioned and diffed, a workspace key's narrower console, no key readable by page
 * scripts, sign-out revoking the session. With data seeded through the API on every page: each page
 * of the navigation and each item page screenshotted, no "—" where the API answered a value, labels
 * instead of keys and names instead of ids, axe-core on each; the model catalog with search; a prompt
 * created with its collection made in the form; Logs' layout shift under 0.1; every page at 375 px
 * without a horizontal scroll. One browser and one Gantry for the file.
 * `GW_SCREENSHOTS=1` writes the screenshots of docs/console.md to docs/console/.
 */
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, seriousViolations } from '../../support/browser.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../../support/mock-openai.ts';
import { waitFor } from '../../support/observability.ts';
import { seed } from './seed.ts';

const SHOTS =
  process.env.GW_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../../docs/console/', import.meta.url)) : path.join(os.tmpdir(), 'gantry-console-shots');
const KEY_MATERIAL = /gw_[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_-]{8,}/;

/** The pages with a list to compare with the API's answer (its first page, as the console asks for it) and the key of its rows. */
interface PageSpec {
  list?: string;
  key: string;
  /** The item's path is the list's path and the row key; with the query the console adds. */
  item?: { base: string; query?: string };
}
const generic = (base: string, key = 'id', item = true, query?: string): PageSpec => ({
  list: `${base}?current_page=0&page_size=20`,
  key,
  ...(item ? { item: { base, ...(query ? { query } : {}) } } : {}),
});
const PAGES: Record<string, PageSpec> = {
  Overview: { key: 'id' },
  Logs: { list: '/v1/logs?page_size=25', key: 'id' },
  'API keys': { list: '/v1/api-keys?page_size=20&cursor=', key: 'id' },
  Configs: { list: '/v1/configs?current_page=0&page_size=20', key: 'id' },
  Workspaces: generic('/v1/admin/workspaces'),
  Users: generic('/v1/admin/users'),
  Invites: generic('/v1/admin/users/invites'),
  Integrations: generic('/v1/integrations', 'slug'),
  Providers: generic('/v1/providers', 'slug'),
  'Secret references': generic('/v1/secret-references'),
  'MCP integrations': generic('/v1/mcp-integrations'),
  'MCP servers': generic('/v1/mcp-servers'),
  'Model pricing': { key: 'model' },
  Prompts: generic('/v1/prompts'),
  'Prompt partials': generic('/v1/prompts/partials'),
  Collections: generic('/v1/collections'),
  Labels: generic('/v1/labels'),
  Guardrails: generic('/v1/guardrails'),
  'Rate limits': generic('/v1/policies/rate-limits'),
  'Usage limits': generic('/v1/policies/usage-limits', 'id', true, '?include_usage=true'),
  'Audit logs': generic('/v1/audit-logs', 'id', false),
  'Log exports': generic('/v1/logs/exports'),
};
const EMPTY = '—';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-/;
/** Fields holding another resource's id: shown by that resource's name. */
const REFS = ['workspace_id', 'collection_id', 'integration_id', 'mcp_integration_id'];
const slug = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '-');
const hasValue = (v: unknown) => v !== null && v !== undefined && v !== '';

/** Loading done: no placeholder rows, no request in flight. */
async function settled(p: Page): Promise<void> {
  await p.waitForLoadState('networkidle');
  await expect.poll(() => p.locator('[aria-busy="true"]').count()).toBe(0);
}

/** Cells that show "—" although the API answered a value for their row and field. */
async function emptyCells(p: Page, name: string, rows: Record<string, unknown>[], key: string): Promise<string[]> {
  const out: string[] = [];
  const shown = p.locator('main table').first().locator('tbody tr[data-row]');
  const count = await shown.count();
  if (!count) return [`${name}: no rows shown though the API lists ${rows.length}`];
  for (let i = 0; i < count; i++) {
    const tr = shown.nth(i);
    const id = await tr.getAttribute('data-row');
    const row = rows.find((r) => String(r[key]) === id);
    if (!row) continue;
    for (const td of await tr.locator('td[data-field]').all()) {
      const field = (await td.getAttribute('data-field')) ?? '';
      const text = (await td.textContent())?.trim() ?? '';
      if (hasValue(row[field]) && (text === EMPTY || text === ''))
        out.push(`${name}: ${field} shows "${text}" but the API answered ${JSON.stringify(row[field])}`);
    }
  }
  return out;
}

/** The first row's item page: a labelled definition list, a value wherever the API has one, names for ids, axe-clean. */
async function itemPage(p: Page, name: string, spec: PageSpec, rows: Record<string, unknown>[]): Promise<string[]> {
  const out: string[] = [];
  const first = p.locator('main table').first().locator('tbody tr[data-row]').first();
  const rowKey = (await first.getAttribute('data-row')) ?? '';
  await first.locator('td').first().getByRole('link').click();
  await p.locator('main dl.facts').first().waitFor();
  await settled(p);
  const item = (await gw().admin('GET', `${spec.item?.base}/${encodeURIComponent(rowKey)}${spec.item?.query ?? ''}`)).json;
  expect(rows.length).toBeGreaterThan(0);
  await p.screenshot({ path: path.join(os.tmpdir(), 'gantry-console-shots', `item-${slug(name)}.png`), fullPage: true });
  if (await p.locator('main pre.json').count()) out.push(`${name} item: raw JSON shown`);
  for (const div of await p.locator('main dl.facts:not(.nested) > div[data-field]').all()) {
    const field = (await div.getAttribute('data-field')) ?? '';
    const label = (await div.locator(':scope > dt').textContent()) ?? '';
    const text = (await div.locator(':scope > dd').textContent())?.trim() ?? '';
    if (label.includes('_')) out.push(`${name} item: the label "${label}" is a key`);
    if (hasValue(item[field]) && (text === EMPTY || text === ''))
      out.push(`${name} item: ${field} shows "${text}" but the API answered ${JSON.stringify(item[field])}`);
    if (REFS.includes(field) && typeof item[field] === 'string') {
      await expect.poll(async () => (await div.locator(':scope > dd').textContent())?.trim(), { message: `${name} item: ${field} by name` }).not.toMatch(UUID);
    }
  }
  for (const v of await seriousViolations(p)) out.push(`${name} item: ${v.id} (${v.impact}) ${v.help}`);
  return out;
}

let current: TestGantry | undefined;
const gw = (): TestGantry => {
  if (!current) throw new Error('no Gantry');
  return current;
};

describe('admin console in Chromium', () => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let createdKey = '';
  // Script errors and CSP refusals on the page, over the whole file.
  const pageErrors: string[] = [];

  const open = async (p: Page, to: string) => {
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: to, exact: true }).click();
    await p.getByRole('heading', { level: 1, name: to }).waitFor();
  };
  const shot = (p: Page, name: string) => p.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  const signIn = async (p: Page, key: string) => {
    await p.goto(`${gw.url}/console/`);
    await p.getByLabel('API key', { exact: true }).fill(key);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('button', { name: 'Sign out' }).waitFor();
  };
  const chat = (key: string, traceId: string) =>
    fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'x-gw-api-key': key,
        'x-gw-provider': 'openai',
        'x-gw-custom-host': `${mock.url}/v1`,
        authorization: 'Bearer sk-provider-secret-123',
        'content-type': 'application/json',
        'x-gw-trace-id': traceId,
      },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the console test' }] }),
    });

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    [gw, mock, browser] = await Promise.all([startGantry('direct'), startMockOpenAI(), launchBrowser()]);
    current = gw;
    await mkdir(path.join(os.tmpdir(), 'gantry-console-shots'), { recursive: true });
    await seed(gw, mock);
    context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
    page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) pageErrors.push(m.text());
    });
  });
  afterAll(async () => {
    await browser?.close();
    await Promise.all([gw?.close(), mock?.close()]);
  });

  it('signs in with the admin key: an HttpOnly, SameSite=Strict session cookie and the full navigation', async () => {
    await page.goto(`${gw.url}/console/`);
    await shot(page, 'sign-in');
    await page.getByLabel('API key', { exact: true }).fill('gw_not-a-real-key-000000000000000000');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/./);
    await signIn(page, ADMIN_KEY);
    const cookie = (await context.cookies()).find((c) => c.name === 'gw_console');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(cookie?.value).not.toContain(ADMIN_KEY);
    const nav = page.getByRole('navigation', { name: 'Console' });
    for (const name of ['Overview', 'Logs', 'API keys', 'Configs', 'Workspaces', 'Users', 'Audit logs'])
      await expect(nav.getByRole('link', { name, exact: true }).count()).resolves.toBe(1);
  });

  it('creates a workspace key and shows it once; the key works at the gateway', async () => {
    await open(page, 'API keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create an API key' });
    await dialog.getByRole('button', { name: 'Create' }).click();
    // The server's problem is shown at the field it names.
    await expect.poll(() => dialog.locator('[data-field="name"]').textContent()).toMatch(/name:/);
    await dialog.getByLabel('Name', { exact: true }).fill('console app');
    await dialog.getByLabel('Expires at (ISO 8601, optional)').fill('2031-01-01T00:00:00Z');
    await dialog.getByRole('button', { name: 'Create' }).click();
    const shown = page.getByRole('dialog', { name: 'Your new key' });
    createdKey = (await shown.getByTestId('new-key').textContent()) ?? '';
    expect(createdKey).toMatch(/^gw_/);
    await shot(page, 'api-key-show-once');
    await shown.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('cell', { name: 'console app', exact: true }).waitFor();
    expect(await page.content()).not.toContain(createdKey);
    const res = await chat(createdKey, 'console-trace-1');
    expect(res.status).toBe(200);
    await res.text();

    // Rotate: confirmed first, then the new key once; the old one still works in its transition period.
    await page.getByRole('button', { name: 'Rotate console app' }).click();
    await page.getByRole('dialog', { name: 'Please confirm' }).getByRole('button', { name: 'Confirm' }).click();
    const rotated = page.getByRole('dialog', { name: 'Rotated key' });
    const newKey = (await rotated.getByTestId('new-key').textContent()) ?? '';
    expect(newKey).toMatch(/^gw_/);
    expect(newKey).not.toBe(createdKey);
    await rotated.getByRole('button', { name: 'I have saved it' }).click();
    const again = await chat(newKey, 'console-trace-rotated');
    expect(again.status).toBe(200);
    await again.text();
    createdKey = newKey;
  });

  it('shows the request in logs (filtered by trace, with its detail) and on the overview chart', async () => {
    await waitFor(gw.deps, async () => {
      const r = await gw.admin('GET', '/v1/logs?trace_id=console-trace-1,console-trace-rotated');
      if ((r.json.data as unknown[] | undefined)?.length !== 2) return undefined;
      return (r.json.data as unknown[] | undefined)?.[0];
    });
    await open(page, 'Logs');
    await page.getByLabel('Trace id').fill('console-trace-1');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const row = page.getByRole('row').filter({ hasText: 'console-trace-1' });
    await row.waitFor();
    expect(await row.textContent()).toContain('gpt-4o-mini');
    await shot(page, 'logs');
    await row.getByRole('link').click();
    await page.getByRole('heading', { name: 'Response body' }).waitFor();
    expect(await page.getByLabel('Request body').textContent()).toContain('Hello from the console test');
    expect(await page.getByLabel('Hook results').count()).toBe(1);
    // A bad filter is named next to its field.
    await open(page, 'Logs');
    await page.getByLabel('Status codes').fill('abc');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => page.locator('p.field-error[data-field="status_code"]').textContent()).toContain('HTTP status codes');

    await open(page, 'Overview');
    const requests = page.locator('[data-chart="requests"]');
    // The two requests of this file and the seeded one.
    await expect.poll(() => requests.locator('[data-total]').textContent()).toBe('3');
    const points = (await requests.locator('path[data-series="total"]').getAttribute('data-points')) ?? '';
    expect(
      points
        .split(',')
        .map(Number)
        .reduce((a, b) => a + b, 0),
    ).toBe(3);
    expect(await page.locator('[data-chart="latency"] path').count()).toBe(3);
    await shot(page, 'overview');
  });

  it('edits and versions a config, with the server’s problems at the field and a diff between versions', async () => {
    await open(page, 'Configs');
    await page.getByRole('button', { name: 'Create config' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create a config' });
    await dialog.getByLabel('Name', { exact: true }).fill('Console routing');
    await dialog.getByLabel('Slug (optional)').fill('console-routing');
    await dialog.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { level: 1, name: 'Config console-routing' }).waitFor();
    const editor = page.getByLabel('Config (JSON)');
    await editor.fill(JSON.stringify({ strategy: { mode: 'sideways' }, targets: [{ provider: 'openai' }] }, null, 2));
    await page.getByRole('button', { name: 'Save new version' }).click();
    await expect.poll(() => page.locator('[data-field^="config.strategy"]').count()).toBeGreaterThan(0);
    await editor.fill(
      JSON.stringify(
        {
          strategy: { mode: 'loadbalance' },
          targets: [
            { provider: 'openai', weight: 1 },
            { provider: 'groq', weight: 1 },
          ],
        },
        null,
        2,
      ),
    );
    await page.getByRole('button', { name: 'Save new version' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved as a new version' }).waitFor();
    await page.getByLabel('Compare version 2').waitFor();
    await page.getByLabel('Compare version 1').check();
    await page.getByLabel('Compare version 2').check();
    const diff = page.getByRole('figure', { name: 'Changes from version 1 to 2' });
    const lines = async (kind: string) => (await diff.locator(`.d-${kind}`).allTextContents()).map((l) => l.trimEnd());
    expect(await lines('removed')).toContain('-     "mode": "fallback"');
    expect(await lines('added')).toContain('+     "mode": "loadbalance"');
    expect(await lines('added')).toContain('+       "provider": "groq",');
    await diff.scrollIntoViewIfNeeded();
    await shot(page, 'config-diff');
  });

  it('shows a prompt with its versions and renders a preview; a missing variable is named', async () => {
    const collection = await gw.admin('POST', '/v1/collections', { name: 'Console prompts', workspace_id: 'default' });
    const created = await gw.admin('POST', '/v1/prompts', {
      name: 'Console greeting',
      collection_id: collection.json.id,
      string: 'Hello {{name}}, welcome',
      parameters: { temperature: 0.2 },
      model: 'gpt-4o-mini',
    });
    expect(created.status).toBe(200);
    await open(page, 'Prompts');
    await page.getByRole('link', { name: 'Console greeting' }).click();
    await page.getByRole('heading', { level: 2, name: 'Versions' }).waitFor();
    await page.getByRole('button', { name: 'Make default' }).first().waitFor();
    const variables = page.getByLabel('Variables and parameters (JSON)');
    await variables.fill(JSON.stringify({ variables: {} }));
    await page.getByRole('button', { name: 'Render' }).click();
    const preview = page.locator('form').filter({ has: page.getByRole('heading', { name: 'Render preview' }) });
    await expect.poll(() => preview.locator('.field-error').allTextContents()).toEqual([expect.stringContaining('name')]);
    await variables.fill(JSON.stringify({ variables: { name: 'Ada' } }));
    await page.getByRole('button', { name: 'Render' }).click();
    await expect.poll(() => page.getByLabel('Rendered').textContent()).toContain('Hello Ada, welcome');
    expect(await seriousViolations(page)).toEqual([]);
  });

  it('shows every page of the navigation with the seeded data: labelled, no "—" where the API answered a value, names for ids, axe-clean', async () => {
    const names = await page.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents();
    expect(names).toEqual(expect.arrayContaining(Object.keys(PAGES)));
    const failures: string[] = [];
    for (const name of names) {
      await open(page, name);
      await settled(page);
      await page.screenshot({ path: path.join(os.tmpdir(), 'gantry-console-shots', `page-${slug(name)}.png`), fullPage: true });
      for (const v of await seriousViolations(page))
        failures.push(`${name}: ${v.id} (${v.impact}) ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);
      const spec = PAGES[name];
      if (!spec?.list) continue;
      const api = await gw.admin('GET', spec.list);
      const rows = api.json.data as Record<string, unknown>[];
      expect(rows.length, `${name}: the API lists seeded items`).toBeGreaterThan(0);
      failures.push(...(await emptyCells(page, name, rows, spec.key)));
      if (spec.item) failures.push(...(await itemPage(page, name, spec, rows)));
    }
    // The dialogs of a create, too.
    await open(page, 'API keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    for (const v of await seriousViolations(page)) failures.push(`create key dialog: ${v.id} ${v.help}`);
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(failures).toEqual([]);
  }, 120_000);

  it('shows the model catalog (300+ models) with custom prices over it, searchable by provider and model', async () => {
    await open(page, 'Model pricing');
    const caption = page.locator('caption').filter({ hasText: /^Models \(/ });
    await expect.poll(async () => Number(/of (\d+)\)/.exec((await caption.textContent()) ?? '')?.[1] ?? 0)).toBeGreaterThanOrEqual(300);
    await page.getByLabel('Search models').fill('openai gpt-4o-mini');
    const row = page.locator('tr[data-row="openai/gpt-4o-mini"]');
    await row.waitFor();
    expect(await row.locator('[data-field="input_per_million"]').textContent()).toMatch(/\$0\.2 custom/);
    expect(await page.locator('tbody tr[data-row]').count()).toBeLessThan(10);
    await page.getByLabel('Search models').fill('');
    await page.getByLabel('Provider', { exact: true }).selectOption('groq');
    await expect.poll(() => page.locator('tbody tr[data-row^="groq/"]').count()).toBeGreaterThan(0);
    const models = page.locator('main table').first();
    expect(await models.locator('tbody tr[data-row]:not([data-row^="groq/"])').count()).toBe(0);
    const custom = page.getByRole('table', { name: 'Custom prices' });
    expect(await custom.locator('tr[data-row="/openai/gpt-4o-mini"] [data-field="workspace_id"]').textContent()).toBe('—');
    // Setting a price from the catalog row.
    await page.getByLabel('Provider', { exact: true }).selectOption('');
    await page.getByLabel('Search models').fill('gpt-4.1-nano');
    await page.getByRole('button', { name: 'Set price of openai gpt-4.1-nano' }).click();
    const dialog = page.getByRole('dialog', { name: 'Price of openai gpt-4.1-nano' });
    await dialog.getByLabel('Input (USD per million tokens)', { exact: true }).fill('0.05');
    await dialog.getByRole('button', { name: 'Save price' }).click();
    await expect.poll(() => page.locator('tr[data-row="openai/gpt-4.1-nano"] [data-field="input_per_million"]').textContent()).toMatch(/\$0\.05 custom/);
    expect((await gw.admin('GET', '/v1/model-configs/pricing/openai/gpt-4.1-nano')).json.custom).toMatchObject({ input_per_million: 0.05 });
    await shot(page, 'pricing');
  });

  it('creates a prompt: the form explains it needs a collection, makes one, and the prompt shows it by name', async () => {
    await open(page, 'Prompts');
    await page.getByRole('button', { name: 'Create' }).click();
    const dialog = page.getByRole('dialog', { name: 'Create: Prompts' });
    await dialog.getByText('Every prompt lives in a collection').waitFor();
    const editor = dialog.getByLabel('The rest of the body (JSON)');
    await expect.poll(() => editor.inputValue()).toContain('"name"');
    // The example's collection (an id of another installation) is not pre-filled.
    expect(await editor.inputValue()).not.toContain('collection_id');
    await editor.fill(JSON.stringify({ name: 'Docs answer', string: 'Answer {{question}}', parameters: {}, model: 'gpt-4o-mini' }));
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    // Without one, the server's problem is shown at the collection field.
    await expect.poll(() => dialog.locator('[data-field="collection_id"]').textContent()).toContain('collection_id: is required');
    await dialog.getByLabel('New collection name').fill('Docs bot');
    await dialog.getByRole('button', { name: 'Create collection' }).click();
    await expect.poll(async () => dialog.getByLabel('Collection', { exact: true }).locator('option:checked').textContent()).toBe('Docs bot');
    await shot(page, 'prompt-create');
    await dialog.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Prompts: Docs answer' }).waitFor();
    await expect.poll(() => page.locator('[data-field="collection_id"] dd').textContent()).toBe('Docs bot');
  });

  it('keeps no key material where page scripts can read it', async () => {
    const readable = await page.evaluate(() => [document.cookie, JSON.stringify({ ...localStorage }), JSON.stringify({ ...sessionStorage })].join('\n'));
    expect(readable).not.toMatch(KEY_MATERIAL);
    expect(readable).not.toContain(ADMIN_KEY);
    expect(readable).not.toContain(createdKey);
    expect(await page.content()).not.toContain(ADMIN_KEY);
    // The app runs under the server's strict CSP without a refusal or a script error.
    expect(pageErrors).toEqual([]);
  });

  it('shows a workspace key only the views its scopes allow', async () => {
    const key = await gw.workspaceKey(['logs.list', 'logs.view', 'configs.list', 'configs.read']);
    const ctx = await browser.newContext();
    try {
      const p = await ctx.newPage();
      await signIn(p, key);
      const links = await p.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents();
      expect(links).toEqual(['Logs', 'Configs']);
      await p.goto(`${gw.url}/console/api-keys`);
      await p.getByRole('heading', { level: 1, name: 'Not available' }).waitFor();
      await open(p, 'Configs');
      expect(await p.getByRole('button', { name: 'Create config' }).count()).toBe(0);
      await shot(p, 'workspace-key');
    } finally {
      await ctx.close();
    }
  });

  it('keeps the Logs page still while it loads (layout shift under 0.1)', async () => {
    const p = await context.newPage();
    try {
      await p.addInitScript(() => {
        const w = globalThis as unknown as { __cls: number };
        w.__cls = 0;
        new PerformanceObserver((list) => {
          for (const e of list.getEntries() as (PerformanceEntry & { value: number; hadRecentInput: boolean })[]) if (!e.hadRecentInput) w.__cls += e.value;
        }).observe({ type: 'layout-shift', buffered: true });
      });
      await p.goto(`${gw.url}/console/logs`);
      await p.locator('tbody tr[data-row]').first().waitFor();
      await settled(p);
      await p.waitForTimeout(300);
      const cls = await p.evaluate(() => (globalThis as unknown as { __cls: number }).__cls);
      expect(cls).toBeLessThan(0.1);
    } finally {
      await p.close();
    }
  });

  it('fits a phone (375 px): the navigation folds behind Menu, tables scroll in their box, no page scrolls sideways', async () => {
    const ctx = await browser.newContext({ viewport: { width: 375, height: 740 } });
    try {
      const p = await ctx.newPage();
      await signIn(p, ADMIN_KEY);
      const nav = p.getByRole('navigation', { name: 'Console' });
      const menu = p.getByRole('button', { name: 'Menu' });
      expect(await nav.isVisible()).toBe(false);
      await menu.click();
      const names = await nav.getByRole('link').allTextContents();
      const wide: string[] = [];
      for (const name of names) {
        if (!(await nav.isVisible())) await menu.click();
        await nav.getByRole('link', { name, exact: true }).click();
        await p.getByRole('heading', { level: 1, name }).waitFor();
        await settled(p);
        const width = await p.evaluate(() => document.scrollingElement?.scrollWidth ?? 0);
        if (width > 375) wide.push(`${name}: ${width}px`);
        if (name === 'Audit logs') await shot(p, 'phone');
      }
      expect(wide).toEqual([]);
      // A wide table scrolls inside its own box.
      const box = p.locator('.table-wrap').first();
      expect(await box.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
    } finally {
      await ctx.close();
    }
  });

  it('signs out: the session is revoked and its cookie no longer works', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === 'gw_console');
    expect(cookie).toBeDefined();
    const asCookie = { cookie: `gw_console=${cookie?.value ?? ''}` };
    expect((await fetch(`${gw.url}/v1/console/session`, { headers: asCookie })).status).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    expect((await fetch(`${gw.url}/v1/console/session`, { headers: asCookie })).status).toBe(401);
    expect((await fetch(`${gw.url}/v1/api-keys`, { headers: asCookie })).status).toBe(401);
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
  });
});
