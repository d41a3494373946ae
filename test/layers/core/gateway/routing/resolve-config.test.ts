/**
 * Inline configs (`x-gw-config` JSON) are parsed and validated once per text: the same text gives
 * the same frozen config, a changed text or provider header is parsed anew, and a bad config is
 * refused every time (never remembered).
 */
import { describe, expect, it } from 'vitest';
import type { CoreDeps } from '../../../../../layers/core/src/deps.ts';
import { ValidationError } from '../../../../../layers/core/src/http/errors.ts';
import { resolveConfig } from '../../../../../layers/core/src/gateway/routing/resolve-config.ts';
import type { Principal } from '../../../../../layers/core/src/kernel/principal.ts';
import { workspacePrincipal } from '../../../../support/identity.ts';

const principal: Principal = workspacePrincipal();
// Inline configs never reach the saved-config cache, the one dependency resolveConfig reads.
const deps = {} as CoreDeps;
const resolve = (headers: Record<string, string>) => resolveConfig(new Headers(headers), principal, deps);

describe('inline configs', () => {
  const text = JSON.stringify({
    strategy: { mode: 'fallback' },
    targets: [
      { provider: 'openai', api_key: 'sk-a' },
      { provider: 'anthropic', api_key: 'sk-b' },
    ],
  });

  it('gives the same frozen config for the same text, and a new one for another text or provider header', async () => {
    const first = await resolve({ 'x-gw-config': text });
    const again = await resolve({ 'x-gw-config': text });
    expect(again.config).toBe(first.config);
    expect(Object.isFrozen(first.config)).toBe(true);
    expect(Object.isFrozen(first.config.targets?.[0])).toBe(true);
    expect(() => ((first.config as { provider?: string }).provider = 'x')).toThrow(TypeError);
    const spaced = await resolve({ 'x-gw-config': text.replace('{', '{ ') });
    expect(spaced.config).not.toBe(first.config);
    expect(spaced.config).toEqual(first.config);
    const withProvider = await resolve({ 'x-gw-config': text, 'x-gw-provider': 'openai' });
    expect(withProvider.config).not.toBe(first.config);
    expect(withProvider.headerProvider).toBe('openai');
  });

  it('refuses a bad config every time, naming the path', async () => {
    const bad = JSON.stringify({ strategy: { mode: 'fallback' }, targets: [{ provider: 'openai', weight: -1 }] });
    for (let i = 0; i < 2; i++) {
      const err = await resolve({ 'x-gw-config': bad }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).problems.map((p) => p.path)).toContain('targets[0].weight');
    }
  });
});
