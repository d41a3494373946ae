/**
 * The allow-list as a property: for any enabled subset of a server's tools, prompts and resources,
 * every entry point (calls, gets, reads, subscriptions, completions, and the four listings answered
 * as JSON or as SSE split at any byte) lets through exactly the enabled ones.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { refusalOf, type AllowList } from '../../../../../layers/core/src/mcp/gateway/allow.ts';
import { filterJsonAnswer, sseFilter } from '../../../../../layers/core/src/mcp/gateway/answers.ts';
import { asRequest, parseMessages } from '../../../../../layers/core/src/mcp/gateway/jsonrpc.ts';

const TOOLS = ['echo', 'add', 'delete_everything', 'ship'];
const PROMPTS = ['greeting', 'review'];
const RESOURCES = ['file:///readme.md', 'file:///secrets.txt'];
const TEMPLATES = ['users://{id}/profile', 'logs://{day}'];

const subset = (all: readonly string[]) => fc.subarray([...all]);
const allowLists = fc
  .record({ tools: subset(TOOLS), prompts: subset(PROMPTS), resources: subset([...RESOURCES, ...TEMPLATES]) })
  .map((a): AllowList => ({ tools: new Set(a.tools), prompts: new Set(a.prompts), resources: new Set(a.resources) }));

type Json = Record<string, unknown>;
const call = (method: string, params: Json) => asRequest({ jsonrpc: '2.0', id: 1, method, params })!;

/** Every entry point that names a capability, and whether the allow-list should let it through. */
function entryPoints(a: AllowList): Array<[ReturnType<typeof call>, boolean]> {
  return [
    ...TOOLS.map((t) => [call('tools/call', { name: t, arguments: {} }), a.tools.has(t)] as [ReturnType<typeof call>, boolean]),
    ...PROMPTS.flatMap(
      (p) =>
        [
          [call('prompts/get', { name: p }), a.prompts.has(p)],
          [call('completion/complete', { ref: { type: 'ref/prompt', name: p }, argument: { name: 'x', value: '' } }), a.prompts.has(p)],
        ] as Array<[ReturnType<typeof call>, boolean]>,
    ),
    ...RESOURCES.flatMap((r) =>
      ['resources/read', 'resources/subscribe', 'resources/unsubscribe'].map(
        (m) => [call(m, { uri: r }), a.resources.has(r)] as [ReturnType<typeof call>, boolean],
      ),
    ),
    [call('resources/read', { uri: 'users://42/profile' }), a.resources.has('users://{id}/profile')],
    [call('resources/read', { uri: 'logs://2026-11-24' }), a.resources.has('logs://{day}')],
  ];
}

const listings = (): Json[] => [
  { jsonrpc: '2.0', id: 'tools', result: { tools: TOOLS.map((name) => ({ name, inputSchema: { type: 'object' } })), nextCursor: 'c2' } },
  { jsonrpc: '2.0', id: 'prompts', result: { prompts: PROMPTS.map((name) => ({ name })) } },
  { jsonrpc: '2.0', id: 'resources', result: { resources: RESOURCES.map((uri) => ({ uri, name: uri })) } },
  { jsonrpc: '2.0', id: 'templates', result: { resourceTemplates: TEMPLATES.map((uriTemplate) => ({ uriTemplate, name: uriTemplate })) } },
];
const pending = new Map<string | number, string>([
  ['tools', 'tools/list'],
  ['prompts', 'prompts/list'],
  ['resources', 'resources/list'],
  ['templates', 'resources/templates/list'],
]);

function expectFiltered(messages: Json[], a: AllowList): void {
  const result = (id: string) => (messages.find((m) => m.id === id)?.result ?? {}) as Record<string, Json[] | undefined>;
  const names = (id: string, list: string, field: string) => (result(id)[list] ?? []).map((e) => e[field]);
  expect(names('tools', 'tools', 'name')).toEqual(TOOLS.filter((t) => a.tools.has(t)));
  expect(result('tools').nextCursor).toBe('c2');
  expect(names('prompts', 'prompts', 'name')).toEqual(PROMPTS.filter((p) => a.prompts.has(p)));
  expect(names('resources', 'resources', 'uri')).toEqual(RESOURCES.filter((r) => a.resources.has(r)));
  expect(names('templates', 'resourceTemplates', 'uriTemplate')).toEqual(TEMPLATES.filter((t) => a.resources.has(t)));
}

describe('MCP allow-list', () => {
  it('refuses exactly the hidden names on every call path, with the same answer for hidden and unknown', () => {
    fc.assert(
      fc.property(allowLists, (a) => {
        for (const [req, allowed] of entryPoints(a)) {
          const refusal = refusalOf(req, a);
          expect(refusal === undefined).toBe(allowed);
          if (refusal) expect(refusal).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32602, message: expect.stringMatching(/ not found$/) } });
        }
        expect(refusalOf(call('tools/call', { name: 'never-heard-of' }), a)?.error.message).toBe('Tool never-heard-of not found');
        expect(refusalOf(call('tools/call', { name: ['echo'] }), a)?.error.message).toMatch(/must name a tool/);
      }),
    );
  });

  it('filters every listing in a JSON batch answer', () => {
    fc.assert(
      fc.property(allowLists, (a) => {
        expectFiltered(JSON.parse(filterJsonAnswer(JSON.stringify(listings()), pending, a, [])) as Json[], a);
      }),
    );
  });

  it('filters listings inside SSE messages however the stream is split, passing other events through unchanged', () => {
    const other = 'event: message\nid: 9\ndata: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"é"}}\n\n';
    const stream =
      other +
      listings()
        .map((m, i) => `event: message\r\nid: ${i}\r\ndata: ${JSON.stringify(m)}\r\n\r\n`)
        .join('');
    const bytes = Buffer.from(stream);
    fc.assert(
      fc.property(allowLists, fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 }), { maxLength: 8 }), (a, cuts) => {
        const f = sseFilter(pending, a, []);
        const points = [0, ...cuts.sort((x, y) => x - y), bytes.length];
        let out = '';
        for (let i = 1; i < points.length; i++) out += f.push(bytes.subarray(points[i - 1], points[i]));
        out += f.end();
        expect(out.startsWith(other)).toBe(true);
        const data = out
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data: '))
          .map((l) => JSON.parse(l.slice(6)) as Json);
        expectFiltered(data, a);
      }),
    );
  });

  it('puts refusals made by the gateway first in an SSE answer and into a JSON batch', () => {
    const refusal = { jsonrpc: '2.0', id: 5, error: { code: -32602, message: 'Tool x not found' } };
    const f = sseFilter(new Map(), { tools: new Set(), prompts: new Set(), resources: new Set() }, [refusal]);
    expect(f.push(Buffer.from('event: message\ndata: {"jsonrpc":"2.0","id":6,"result":{}}\n\n'))).toBe(
      `event: message\ndata: ${JSON.stringify(refusal)}\n\nevent: message\ndata: {"jsonrpc":"2.0","id":6,"result":{}}\n\n`,
    );
    expect(
      JSON.parse(
        filterJsonAnswer('{"jsonrpc":"2.0","id":6,"result":{}}', new Map(), { tools: new Set(), prompts: new Set(), resources: new Set() }, [refusal]),
      ),
    ).toEqual([refusal, { jsonrpc: '2.0', id: 6, result: {} }]);
  });

  it('answers a JSON-RPC error naming the problem for a body that is not JSON-RPC', () => {
    expect(parseMessages('{nope')).toMatchObject({ error: { code: -32700 } });
    expect(parseMessages('[]')).toMatchObject({ error: { code: -32600, message: expect.stringMatching(/empty batch/) } });
    expect(parseMessages('[1]')).toMatchObject({ error: { code: -32600 } });
    expect(parseMessages('{"jsonrpc":"1.0","id":1,"method":"x"}')).toMatchObject({ error: { message: expect.stringMatching(/jsonrpc must be "2.0"/) } });
  });
});
