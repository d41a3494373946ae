/**
 * Cursor paging of `GET /v1/api-keys` (what the console uses at a million keys): `?cursor=` pages
 * through every key once with `has_more`/`next_cursor`, `total` is null (no count of every key),
 * a workspace's keys come oldest first, a forged cursor is a 400 naming `cursor`, and a workspace
 * key still sees only its own workspace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../layers/core/src/ports/clock.ts';
import { startGantry, type TestGantry } from '../support/gantry.ts';

type Json = Record<string, unknown>;

describe('api keys with a cursor', () => {
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  let gw: TestGantry;
  const made: string[] = [];

  beforeAll(async () => {
    gw = await startGantry('direct', {}, { clock });
    const ws = await gw.admin('POST', '/v1/admin/workspaces', { name: 'Cursor', slug: 'cursor-ws' });
    expect(ws.status, JSON.stringify(ws.json)).toBe(200);
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      const r = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: `k${i}`, workspace_id: 'cursor-ws', scopes: ['api_keys.list'] });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      made.push(r.json.id as string);
    }
  });
  afterAll(() => gw?.close());

  const walk = async (query: string, key?: string) => {
    const seen: string[] = [];
    let cursor = '';
    for (let pages = 0; pages < 50; pages++) {
      const r = await gw.admin('GET', `/v1/api-keys?${query}&page_size=2&cursor=${cursor}`, undefined, key);
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect(r.json.total).toBeNull();
      const data = r.json.data as Json[];
      expect(data.length).toBeLessThanOrEqual(2);
      seen.push(...data.map((k) => k.id as string));
      if (!r.json.has_more) {
        expect(r.json.next_cursor).toBeNull();
        return seen;
      }
      cursor = r.json.next_cursor as string;
    }
    throw new Error('the cursor never ended');
  };

  it("pages through a workspace's keys oldest first, each once", async () => {
    expect(await walk('workspace_id=cursor-ws')).toEqual(made);
  });

  it("pages through the organisation's keys, each once, and the classic pages still count them", async () => {
    const seen = await walk('x=1');
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expect.arrayContaining(made));
    const classic = await gw.admin('GET', '/v1/api-keys?page_size=100');
    expect(classic.json.total).toBe(seen.length);
  });

  it('refuses a cursor it did not issue, naming the field', async () => {
    for (const bad of ['nope', Buffer.from('{"id":1}').toString('base64url'), Buffer.from('[]').toString('base64url')]) {
      const r = await gw.admin('GET', `/v1/api-keys?page_size=2&cursor=${bad}`);
      expect(r.status, bad).toBe(400);
      expect(JSON.stringify(r.json), bad).toContain('cursor');
    }
  });

  it("keeps a workspace key to its own workspace's keys", async () => {
    clock.advance(1000); // a later creation time: keys created in the same millisecond order by their random id
    const own = await gw.admin('POST', '/v1/api-keys/workspace/service', { name: 'lister', workspace_id: 'cursor-ws', scopes: ['api_keys.list'] });
    const seen = await walk('x=1', own.json.key as string);
    expect(seen).toEqual([...made, own.json.id]);
  });
});
