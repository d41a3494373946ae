/**
 * The admin console in a real Chromium (playwright-core) against the local server: sign in with
 * the admin key, create a key (show-once), a gateway request in logs and on the overview chart, a
 * config edited, versioned and diffed, a workspace key's narrower console, no key readable by page
 * scripts, axe-core on every page, sign-out revoking the session. One browser for the file.
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

const SHOTS = process.env.GW_SCREENSHOTS === '1' ? fileURLToPath(new URL('../../../docs/console/', import.meta.url)) : path.join(os.tmpdir(), 'gantry-console-shots');
const KEY_MATERIAL = /gw_[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_-]{8,}/;

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
      headers: { 'x-gw-api-key': key, 'x-gw-provider': 'openai', 'x-gw-custom-host': `${mock.url}/v1`, authorization: 'Bearer sk-provider-secret-123', 'content-type': 'application/json', 'x-gw-trace-id': traceId },
      body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hello from the console test' }] }),
    });

  beforeAll(async () => {
    await mkdir(SHOTS, { recursive: true });
    [gw, mock, browser] = await Promise.all([startGantry('direct'), startMockOpenAI(), launchBrowser()]);
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
    for (const name of ['Overview', 'Logs', 'API keys', 'Configs', 'Workspaces', 'Users', 'Audit logs']) await expect(nav.getByRole('link', { name, exact: true }).count()).resolves.toBe(1);
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
    await expect.poll(() => page.locator('[data-field="status_code"]').textContent()).toContain('HTTP status codes');

    await open(page, 'Overview');
    const requests = page.locator('[data-chart="requests"]');
    await expect.poll(() => requests.locator('[data-total]').textContent()).toBe('2');
    const points = (await requests.locator('path[data-series="total"]').getAttribute('data-points')) ?? '';
    expect(points.split(',').map(Number).reduce((a, b) => a + b, 0)).toBe(2);
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
    await editor.fill(JSON.stringify({ strategy: { mode: 'loadbalance' }, targets: [{ provider: 'openai', weight: 1 }, { provider: 'groq', weight: 1 }] }, null, 2));
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

  it('passes axe-core (no serious or critical violation) on every page', async () => {
    const names = await page.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents();
    expect(names.length).toBeGreaterThan(10);
    const failures: string[] = [];
    for (const name of names) {
      await open(page, name);
      await page.waitForLoadState('networkidle');
      for (const v of await seriousViolations(page)) failures.push(`${name}: ${v.id} (${v.impact}) ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`);
    }
    await open(page, 'API keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    for (const v of await seriousViolations(page)) failures.push(`create key dialog: ${v.id} ${v.help}`);
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(failures).toEqual([]);
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
