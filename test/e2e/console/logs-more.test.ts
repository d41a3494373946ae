/**
 * The console's Logs page when the server's read budget cuts a page short: 12,000 logs, six of them
 * on one trace. Filtered by that trace, the first page holds the matches among the logs the server
 * read and says how far back it searched; More searches on from the answer's cursor and adds the
 * rest to the page, then goes away. A real Chromium against the local server.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { observability } from '../../../layers/core/src/observability/install.ts';
import type { LogEvent } from '../../../layers/core/src/observability/log-event.ts';
import { LIST_MAX_EXAMINED } from '../../../layers/core/src/observability/log-store.ts';
import { DAY_MS } from '../../../layers/core/src/observability/time.ts';
import { launchBrowser } from '../../support/browser.ts';
import { ADMIN_KEY, startGantry, type TestGantry } from '../../support/gantry.ts';
import { syntheticEvents } from '../../support/observability.ts';

const LOGS = LIST_MAX_EXAMINED + 2_000;
const TRACE = 'needle-trace';

describe('console logs: a page the read budget cut short', () => {
  let gw: TestGantry;
  let browser: Browser;
  let page: Page;
  let needles: LogEvent[];

  /** Log items as the ingest writes them, in today and yesterday (which a list reads without rollups). */
  async function write(events: readonly LogEvent[]): Promise<void> {
    const store = observability(gw.deps).logs;
    const { doc, tableName } = gw.deps.repos.table;
    const batches = [];
    for (let i = 0; i < events.length; i += 25) batches.push(events.slice(i, i + 25).map((e) => ({ PutRequest: { Item: store.itemOf(e) } })));
    for (let i = 0; i < batches.length; i += 8) {
      await Promise.all(batches.slice(i, i + 8).map((b) => doc.send(new BatchWriteCommand({ RequestItems: { [tableName]: b } }))));
    }
  }

  beforeAll(async () => {
    [gw, browser] = await Promise.all([startGantry('direct'), launchBrowser()]);
    const now = Date.now();
    const yesterday = Math.floor(now / DAY_MS) * DAY_MS - DAY_MS;
    const events = syntheticEvents(LOGS, {
      start: yesterday,
      spanMs: now - yesterday - 60_000,
      workspaceId: gw.boot.workspaceId,
      organisationId: gw.boot.organisationId,
      seed: 31,
    }).map((e, i) => (i % 2_000 === 1_000 ? { ...e, trace_id: TRACE } : e));
    needles = events.filter((e) => e.trace_id === TRACE).sort((a, b) => b.started_ms - a.started_ms);
    await write(events);
    page = await (await browser.newContext({ viewport: { width: 1100, height: 760 } })).newPage();
    await page.goto(`${gw.url}/console/`);
    await page.getByLabel('API key', { exact: true }).fill(ADMIN_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
  });

  const rowLinks = () => page.locator('.logs tbody tr:not(.placeholder) a');

  it('says how far back the page searched, and More adds the older matches to it', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Logs', exact: true }).click();
    await page.getByLabel('Trace id').fill(TRACE);
    const answers: string[] = [];
    page.on('request', (r) => r.url().includes('/v1/logs?') && answers.push(r.url()));
    await page.getByRole('button', { name: 'Apply filters' }).click();
    const status = page.getByRole('status').filter({ hasText: 'Searched back to' });
    await status.waitFor();
    const shown = await rowLinks().count();
    expect(shown).toBeGreaterThan(0);
    expect(shown).toBeLessThan(needles.length);
    await page.getByRole('button', { name: 'More' }).click();
    await expect.poll(() => rowLinks().count()).toBe(needles.length);
    // The rows are every match, newest first, each once; the search reached the end, so no More.
    const hrefs = await rowLinks().evaluateAll((links) => links.map((a) => a.getAttribute('href') ?? ''));
    expect(hrefs.map((h) => decodeURIComponent(h.slice(h.lastIndexOf('/') + 1)))).toEqual(needles.map((e) => e.id));
    expect(await page.getByRole('button', { name: 'More' }).count()).toBe(0);
    expect(await status.count()).toBe(0);
    // More continued from the first answer's cursor, asking only for the rows the page still had room for.
    const more = new URL(answers.at(-1) ?? '');
    expect(more.searchParams.get('cursor')).toEqual(expect.any(String));
    expect(more.searchParams.get('page_size')).toBe(String(25 - shown));
  });
});
