/**
 * The policy bodies docs/limits.md shows are real: each example is sent, as the page has it, to the
 * admin API of a local server with an organisation key, must be accepted, and must read back as
 * written. A wrong field name or shape in the docs fails here with the validator's own message.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';

type Json = Record<string, unknown>;

const PAGE = readFileSync(path.resolve(import.meta.dirname, '../../docs/limits.md'), 'utf8');
const EXAMPLES = [...PAGE.matchAll(/<!-- example: (POST|PUT) (\S+) -->\s*```json\n([\s\S]*?)```/g)].map((m) => ({
  method: m[1] as string,
  path: m[2] as string,
  body: JSON.parse(m[3] as string) as Json,
}));

/** Fields that read back exactly as they were sent. */
const ECHOED = [
  'conditions',
  'group_by',
  'type',
  'unit',
  'value',
  'credit_limit',
  'alert_threshold',
  'periodic_reset',
  'periodic_reset_days',
  'alert_emails',
  'name',
];

describe('the policy examples of docs/limits.md', () => {
  let gw: TestGantry;
  beforeAll(async () => {
    gw = await startGantry('direct');
  });
  afterAll(() => gw.close());

  it('has examples of both kinds, and of a change', () => {
    expect(EXAMPLES.filter((e) => e.method === 'POST').map((e) => e.path)).toEqual(
      expect.arrayContaining(['/v1/policies/rate-limits', '/v1/policies/usage-limits']),
    );
    expect(EXAMPLES.some((e) => e.method === 'PUT')).toBe(true);
  });

  it('accepts every example and reads it back as written', async () => {
    const created = new Map<string, string>();
    for (const { method, path: route, body } of EXAMPLES) {
      const collection = route.replace(/\/\{id\}$/, '');
      const id = created.get(collection);
      const target = method === 'PUT' ? route.replace('{id}', String(id)) : route;
      const res = await gw.admin(method, target, body);
      expect(res.status, `${method} ${route} ${JSON.stringify(body)}: ${JSON.stringify(res.json)}`).toBe(200);
      if (method === 'POST') created.set(collection, res.json.id as string);

      const read = await gw.admin('GET', `${collection}/${method === 'POST' ? String(res.json.id) : String(id)}`);
      expect(read.status).toBe(200);
      for (const field of ECHOED.filter((f) => f in body)) expect(read.json[field], `${route} ${field}`).toEqual(body[field]);
    }
  });
});
