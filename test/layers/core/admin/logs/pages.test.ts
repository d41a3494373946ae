/**
 * The logs list's pages are full: a filter that matches one log in 500 fills its page (or lists
 * every match) instead of coming back short at a read budget the caller cannot see. Where the budget
 * still ends a page (a filter rarer than that over a busy range), the answer says so: `partial`, the
 * time it searched down to (`scanned_until`), `has_more` and a `next_cursor` that continues below it,
 * so that following the cursors lists every match once.
 */
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminModule } from '../../../../../layers/core/src/admin/routes.ts';
import { createApp } from '../../../../../layers/core/src/app.ts';
import { ensureBootstrap, type BootstrapResult } from '../../../../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { observability } from '../../../../../layers/core/src/observability/install.ts';
import type { LogEvent } from '../../../../../layers/core/src/observability/log-event.ts';
import { LIST_MAX_EXAMINED } from '../../../../../layers/core/src/observability/log-store.ts';
import { HOUR_MS } from '../../../../../layers/core/src/observability/time.ts';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { createTestDeps } from '../../../../support/deps.ts';
import { ADMIN_KEY } from '../../../../support/gantry.ts';
import { syntheticEvents } from '../../../../support/observability.ts';

const NOW = Date.UTC(2026, 6, 14, 20, 0, 0);
type Json = Record<string, unknown>;
type Answer = { data: { id: string; created_at: string }[]; has_more: boolean; next_cursor: string | null; partial: boolean; scanned_until: string | null };

const newestFirst = (xs: readonly LogEvent[]) => [...xs].sort((a, b) => b.started_ms - a.started_ms || (b.id > a.id ? 1 : -1));

/** Marks the logs `pick` chooses with `metadata.flag=rare`. */
function flagged(events: LogEvent[], pick: (i: number) => boolean): LogEvent[] {
  return events.map((e, i) => (pick(i) ? { ...e, metadata: { ...e.metadata, flag: 'rare' } } : e));
}

describe('logs pages', () => {
  const clock = new ManualClock(NOW);
  let deps: CoreDeps;
  let boot: BootstrapResult;
  let app: ReturnType<typeof createApp>;
  let busy: string;

  const list = async (query: string): Promise<Answer & Json> => {
    const res = await app.request(`/v1/logs?${query}`, { headers: { 'x-gw-api-key': ADMIN_KEY } });
    expect(res.status).toBe(200);
    return (await res.json()) as Answer & Json;
  };

  /** The log items, written as the ingest would (in today and yesterday, which a list reads without rollups). */
  async function write(events: readonly LogEvent[]): Promise<void> {
    const store = observability(deps).logs;
    const batches = [];
    for (let i = 0; i < events.length; i += 25) batches.push(events.slice(i, i + 25).map((e) => ({ PutRequest: { Item: store.itemOf(e) } })));
    for (let i = 0; i < batches.length; i += 8) {
      await Promise.all(batches.slice(i, i + 8).map((b) => deps.repos.table.doc.send(new BatchWriteCommand({ RequestItems: { [deps.config.tableName]: b } }))));
    }
  }

  let sparse: LogEvent[];
  let sparser: LogEvent[];

  beforeAll(async () => {
    deps = await createTestDeps({}, { clock });
    boot = await ensureBootstrap(deps, ADMIN_KEY);
    const at = { organisationId: boot.organisationId };
    // 3,000 logs of today, one in 500 flagged.
    sparse = flagged(
      syntheticEvents(3_000, { ...at, start: NOW - 19 * HOUR_MS, spanMs: 19 * HOUR_MS, workspaceId: boot.workspaceId, seed: 11 }),
      (i) => i % 500 === 250,
    );
    // More logs than a page reads, over today and yesterday: the flag on one in 2,000.
    app = createApp(deps, [adminModule]);
    const created = await app.request('/v1/workspaces', {
      method: 'POST',
      headers: { 'x-gw-api-key': ADMIN_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Busy' }),
    });
    busy = ((await created.json()) as { id: string }).id;
    sparser = flagged(
      syntheticEvents(LIST_MAX_EXAMINED + 2_000, { ...at, start: NOW - 40 * HOUR_MS, spanMs: 40 * HOUR_MS, workspaceId: busy, seed: 12 }),
      (i) => i % 2_000 === 1_000,
    );
    await write([...sparse, ...sparser]);
  });
  afterAll(() => deps.upstream.close());

  it('fills a page of 20 with a filter that matches one log in 500, or lists every match with no cursor', async () => {
    const expected = newestFirst(sparse.filter((e) => e.metadata?.flag === 'rare')).map((e) => e.id);
    expect(expected).toHaveLength(6);
    const page = await list('workspace_id=default&page_size=20&metadata.flag=rare');
    expect(page.data.map((r) => r.id)).toEqual(expected);
    expect(page).toMatchObject({ has_more: false, next_cursor: null, partial: false, scanned_until: null });
  });

  it('answers a full page without a filter, not partial', async () => {
    const page = await list('workspace_id=default&page_size=20');
    expect(page.data.map((r) => r.id)).toEqual(
      newestFirst(sparse)
        .slice(0, 20)
        .map((e) => e.id),
    );
    expect(page).toMatchObject({ has_more: true, partial: false, scanned_until: null });
    expect(page.next_cursor).toEqual(expect.any(String));
  });

  it('says when the read budget ended a page: partial, the time searched down to, and a cursor that lists every match once', async () => {
    const matching = newestFirst(sparser.filter((e) => e.metadata?.flag === 'rare'));
    const first = await list(`workspace_id=${busy}&page_size=20&metadata.flag=rare`);
    expect(first.data.length).toBeLessThan(20);
    expect(first).toMatchObject({ has_more: true, partial: true });
    expect(first.next_cursor).toEqual(expect.any(String));
    // Every match newer than `scanned_until` is on the page, and none older.
    const until = Date.parse(String(first.scanned_until));
    expect(first.data.map((r) => r.id)).toEqual(matching.filter((e) => e.started_ms > until).map((e) => e.id));
    expect(until).toBeGreaterThan(NOW - 40 * HOUR_MS);
    const seen = first.data.map((r) => r.id);
    let cursor = first.next_cursor;
    for (let pages = 1; cursor; pages++) {
      expect(pages).toBeLessThan(5);
      const next = await list(`workspace_id=${busy}&page_size=20&metadata.flag=rare&cursor=${encodeURIComponent(cursor)}`);
      expect(next.partial).toBe(next.next_cursor !== null && next.data.length < 20);
      seen.push(...next.data.map((r) => r.id));
      cursor = next.next_cursor;
    }
    expect(seen).toEqual(matching.map((e) => e.id));
  });
});
