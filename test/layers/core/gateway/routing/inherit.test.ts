import { describe, expect, it } from 'vitest';
import { childContext, leaves, rootContext, targetPath, toResolvedTarget } from '../../../../../layers/core/src/gateway/routing/inherit.ts';
import type { ConfigNode } from '../../../../../layers/core/src/kernel/routing.ts';

const fallback = (targets: ConfigNode[], extra: ConfigNode = {}): ConfigNode => ({ strategy: { mode: 'fallback' }, targets, ...extra });

/** The single leaf of `parent -> child`. */
function resolve(parent: ConfigNode, child: ConfigNode) {
  const [target] = leaves(fallback([child], parent));
  if (!target) throw new Error('no leaf');
  return target;
}

describe('paths', () => {
  it('names the root `config` and targets by index at every depth', () => {
    const config = fallback([fallback([{ provider: 'a' }, { provider: 'b' }, { provider: 'c' }]), { provider: 'd' }]);
    expect(leaves(config).map((t) => t.path)).toEqual([
      'config.targets[0].targets[0]',
      'config.targets[0].targets[1]',
      'config.targets[0].targets[2]',
      'config.targets[1]',
    ]);
    expect(leaves({ provider: 'openai' }).map((t) => t.path)).toEqual(['config']);
    expect(targetPath('config.targets[0]', 2)).toBe('config.targets[0].targets[2]');
  });

  it('keeps names and skips nothing', () => {
    const config = fallback([{ name: 'x', provider: 'a' }, fallback([{ provider: 'b', name: 'y' }])]);
    expect(leaves(config).map((t) => [t.path, t.name])).toEqual([
      ['config.targets[0]', 'x'],
      ['config.targets[1].targets[0]', 'y'],
    ]);
  });
});

describe('defaults', () => {
  it('resolves a bare leaf with defaults only', () => {
    expect(toResolvedTarget(rootContext(), { provider: 'openai' }, 'config')).toEqual({
      path: 'config',
      provider: 'openai',
      override_params: {},
      strict_openai_compliance: true,
      options: {},
      hooks: {},
    });
  });

  it('starts from what the request contributes', () => {
    const [t] = leaves({ override_params: { model: 'm' } }, rootContext({ provider: 'openai', request_timeout: 5000 }));
    expect(t).toMatchObject({ provider: 'openai', request_timeout: 5000, override_params: { model: 'm' } });
  });
});

describe('retry and cache: replaced wholesale', () => {
  const parent: ConfigNode = {
    retry: { attempts: 3, on_status_codes: [429], use_retry_after_header: true },
    cache: { mode: 'semantic', max_age: 600, similarity_threshold: 0.9 },
  };

  it('inherits them when the child sets none', () => {
    const t = resolve(parent, { provider: 'a' });
    expect(t.retry).toEqual(parent.retry);
    expect(t.cache).toEqual(parent.cache);
  });

  it('replaces them, without merging fields, when the child sets its own', () => {
    const t = resolve(parent, { provider: 'a', retry: { attempts: 1 }, cache: { mode: 'simple' } });
    expect(t.retry).toEqual({ attempts: 1 });
    expect(t.cache).toEqual({ mode: 'simple' });
  });
});

describe('override_params: merged key by key', () => {
  it('merges shallowly with the child winning, across levels', () => {
    const config = fallback(
      [
        fallback([{ provider: 'a', override_params: { max_tokens: 10, response_format: { type: 'text' } } }], {
          override_params: { temperature: 0.5, response_format: { type: 'json_object', schema: 1 } },
        }),
      ],
      { override_params: { model: 'gpt-4o', temperature: 1 } },
    );
    const [t] = leaves(config);
    // response_format is replaced as a whole value: the merge is shallow.
    expect(t?.override_params).toEqual({ model: 'gpt-4o', temperature: 0.5, max_tokens: 10, response_format: { type: 'text' } });
  });

  it('does not mutate the config', () => {
    const parent: ConfigNode = { override_params: { a: 1 } };
    const t = resolve(parent, { provider: 'x', override_params: { b: 2 } });
    t.override_params.c = 3;
    expect(parent.override_params).toEqual({ a: 1 });
  });
});

describe('fields inherited unless the child sets its own', () => {
  const parent: ConfigNode = {
    custom_host: 'https://parent.example.com',
    forward_headers: ['x-a'],
    request_timeout: 1000,
    strict_openai_compliance: false,
    before_request_hooks: [{ id: 'before' }],
    after_request_hooks: [{ id: 'after' }],
    input_guardrails: ['in'],
    output_guardrails: ['out'],
  };

  it('inherits each of them', () => {
    const t = resolve(parent, { provider: 'a' });
    expect(t).toMatchObject({
      custom_host: 'https://parent.example.com',
      forward_headers: ['x-a'],
      request_timeout: 1000,
      strict_openai_compliance: false,
    });
    expect(t.hooks).toEqual({
      before_request_hooks: [{ id: 'before' }],
      after_request_hooks: [{ id: 'after' }],
      input_guardrails: ['in'],
      output_guardrails: ['out'],
    });
  });

  it("uses the child's own, each independently", () => {
    const t = resolve(parent, {
      provider: 'a',
      custom_host: 'https://child.example.com',
      forward_headers: [],
      request_timeout: 2000,
      strict_openai_compliance: true,
      after_request_hooks: [],
    });
    expect(t).toMatchObject({
      custom_host: 'https://child.example.com',
      forward_headers: [],
      request_timeout: 2000,
      strict_openai_compliance: true,
    });
    expect(t.hooks).toEqual({
      before_request_hooks: [{ id: 'before' }],
      after_request_hooks: [],
      input_guardrails: ['in'],
      output_guardrails: ['out'],
    });
  });

  it('passes passthrough down through several levels, a child setting its own', () => {
    expect(leaves({ provider: 'a' })[0]?.passthrough).toBeUndefined();
    const config = fallback([fallback([{ provider: 'a' }, { provider: 'b', passthrough: 'allow' }])], { passthrough: 'deny' });
    expect(leaves(config).map((t) => t.passthrough)).toEqual(['deny', 'allow']);
  });

  it('defaults strict_openai_compliance to true and passes false down through several levels', () => {
    expect(leaves({ provider: 'a' })[0]?.strict_openai_compliance).toBe(true);
    const config = fallback([fallback([{ provider: 'a' }])], { strict_openai_compliance: false });
    expect(leaves(config)[0]?.strict_openai_compliance).toBe(false);
  });
});

describe('provider, keys and provider options', () => {
  it('lets a parent name the provider, key and options for all its children', () => {
    const config = fallback([{ override_params: { model: 'a' } }, { api_key: 'child-key', aws_region: 'us-east-1' }], {
      provider: 'bedrock',
      api_key: 'parent-key',
      aws_region: 'eu-west-1',
      aws_access_key_id: 'AKIA',
    });
    const [first, second] = leaves(config);
    expect(first).toMatchObject({ provider: 'bedrock', api_key: 'parent-key', options: { aws_region: 'eu-west-1', aws_access_key_id: 'AKIA' } });
    expect(second).toMatchObject({ provider: 'bedrock', api_key: 'child-key', options: { aws_region: 'us-east-1', aws_access_key_id: 'AKIA' } });
  });

  it('keeps inheriting when the child repeats the same provider', () => {
    const t = resolve({ provider: 'azure-openai', api_key: 'k', azure_resource_name: 'r' }, { provider: 'azure-openai', azure_deployment_id: 'd' });
    expect(t).toMatchObject({ provider: 'azure-openai', api_key: 'k', options: { azure_resource_name: 'r', azure_deployment_id: 'd' } });
  });

  it("never hands one provider's key or options to another provider", () => {
    const t = resolve({ provider: 'openai', api_key: 'sk-openai', openai_project: 'p' }, { provider: 'anthropic' });
    expect(t.provider).toBe('anthropic');
    expect(t.api_key).toBeUndefined();
    expect(t.options).toEqual({});
  });

  it('lets a virtual key replace an inherited provider and key', () => {
    const t = resolve({ provider: 'openai', api_key: 'sk-openai' }, { virtual_key: 'vk-anthropic' });
    expect(t).toMatchObject({ virtual_key: 'vk-anthropic' });
    expect(t.provider).toBeUndefined();
    expect(t.api_key).toBeUndefined();
  });

  it('inherits a virtual key', () => {
    const t = resolve({ virtual_key: 'vk-1' }, { override_params: { model: 'm' } });
    expect(t.virtual_key).toBe('vk-1');
  });

  it('does not count config keys as provider options', () => {
    const t = toResolvedTarget(rootContext(), { provider: 'a', name: 'n', weight: 2, retry: { attempts: 1 }, vertex_region: 'r' }, 'config');
    expect(t.options).toEqual({ vertex_region: 'r' });
  });
});

describe('childContext', () => {
  it('is what toResolvedTarget applies to a leaf', () => {
    const parent = childContext(rootContext(), { provider: 'a', override_params: { x: 1 }, retry: { attempts: 2 } });
    const node: ConfigNode = { override_params: { y: 2 }, request_timeout: 10 };
    const ctx = childContext(parent, node);
    const t = toResolvedTarget(parent, node, 'config.targets[0]');
    expect(t).toMatchObject({
      provider: ctx.provider,
      override_params: ctx.override_params,
      retry: ctx.retry,
      request_timeout: ctx.request_timeout,
    });
  });

  it('does not change the parent context', () => {
    const parent = rootContext({ provider: 'a' });
    const snapshot = structuredClone(parent);
    childContext(parent, { provider: 'b', override_params: { z: 1 }, before_request_hooks: [] });
    expect(parent).toEqual(snapshot);
  });
});
