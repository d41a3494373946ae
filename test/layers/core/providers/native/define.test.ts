/** A native provider module built from its declaration: identity and endpoints come from the declaration only. */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../../../../layers/core/src/ports/clock.ts';
import { defineNative } from '../../../../../layers/core/src/providers/native/define.ts';
import { nativeContext } from '../../../../../layers/core/src/providers/native/index.ts';
import type { ProviderDefinition } from '../../../../../layers/core/src/providers/types.ts';

const ctx = nativeContext({ body: { model: 'm-1' }, options: { region: 'eu' }, strictOpenAICompliance: false, clock: new ManualClock(0), requestId: 'r' });
const behaviour = {
  authenticate: (req: never) => Promise.resolve(req),
  transformError: () => ({ error: { message: 'x', type: 'api_error', param: null, code: null } }),
};

const decl = <const E extends ProviderDefinition['endpoints']>(baseUrl: string, endpoints: E) =>
  ({ id: 'acme', name: 'Acme AI', baseUrl, auth: { kind: 'bearer' }, endpoints, native: true }) as ProviderDefinition & { readonly endpoints: E };

describe('defineNative', () => {
  it('takes id, name, base URL and endpoints from the declaration; undeclared builders are POSTs to the declared path', () => {
    const p = defineNative(decl('https://api.acme.test/v2', { chatComplete: '/chat', embed: '/embed' }), behaviour);
    expect([p.id, p.name, p.baseUrl(ctx)]).toEqual(['acme', 'Acme AI', 'https://api.acme.test/v2']);
    expect(Object.keys(p.endpoints).sort()).toEqual(['chatComplete', 'embed']);
    expect(p.endpoints.embed?.(ctx)).toEqual({ method: 'POST', path: '/embed' });
  });

  it('gives a builder the declared path template', () => {
    const p = defineNative(decl('https://{region}.acme.test', { chatComplete: '/models/{model}:chat' }), {
      ...behaviour,
      baseUrl: (c) => `https://${String(c.options.region)}.acme.test`,
      endpoints: { chatComplete: (c, declared) => ({ method: 'POST', path: declared.replace('{model}', c.model) }) },
    });
    expect(p.baseUrl(ctx)).toBe('https://eu.acme.test');
    expect(p.endpoints.chatComplete?.(ctx)).toEqual({ method: 'POST', path: '/models/m-1:chat' });
  });

  it('refuses a declared base URL with placeholders that the module does not build', () => {
    expect(() => defineNative(decl('https://{region}.acme.test', {}), behaviour)).toThrow(/placeholders/);
  });
});
