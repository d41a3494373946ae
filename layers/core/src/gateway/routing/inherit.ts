/**
 * What a config node passes down to its targets (docs/design/reference-behaviour.md#inheritance):
 * - `retry` and `cache` are replaced wholesale when a child sets them;
 * - `override_params` merge shallowly, key by key, the child's values winning;
 * - `custom_host`, `forward_headers`, `request_timeout`, each hook list,
 *   `strict_openai_compliance` (default true) and `passthrough` pass down unless the child sets its own;
 * - `provider`, `api_key`, `virtual_key` and provider options pass down too, so a parent can name
 *   the provider for all its children. A child that switches to another provider or virtual key
 *   starts afresh instead: one provider's key and options must never be sent to another.
 */
import type { CacheSettings, ConfigNode, PassthroughSetting, ResolvedTarget, RetrySettings } from '../../kernel/routing.ts';

/** Keys with a meaning of their own; every other key on a node is a provider option. */
export const CONFIG_KEYS: ReadonlySet<string> = new Set([
  'strategy',
  'targets',
  'name',
  'weight',
  'provider',
  'api_key',
  'virtual_key',
  'override_params',
  'retry',
  'request_timeout',
  'cache',
  'custom_host',
  'forward_headers',
  'strict_openai_compliance',
  'passthrough',
  'before_request_hooks',
  'after_request_hooks',
  'input_guardrails',
  'output_guardrails',
]);

export const HOOK_KEYS = ['before_request_hooks', 'after_request_hooks', 'input_guardrails', 'output_guardrails'] as const;
export type HookKey = (typeof HOOK_KEYS)[number];

/** Hook lists in effect for a target (each one inherited separately). */
export type TargetHooks = Partial<Record<HookKey, unknown[]>>;

/** Everything a node hands down to its targets. */
export interface Inherited {
  provider?: string;
  api_key?: string;
  virtual_key?: string;
  override_params: Readonly<Record<string, unknown>>;
  retry?: RetrySettings;
  request_timeout?: number;
  cache?: CacheSettings;
  custom_host?: string;
  forward_headers?: string[];
  strict_openai_compliance: boolean;
  passthrough?: PassthroughSetting;
  hooks: Readonly<TargetHooks>;
  options: Readonly<Record<string, unknown>>;
}

/**
 * A leaf target ready to call. ResolvedTarget (types.ts) has no place for hooks, which are
 * inherited too, so they ride alongside.
 */
export type RoutedTarget = ResolvedTarget & { hooks: TargetHooks };

/**
 * What the root inherits: defaults, plus whatever the request itself contributes above the config
 * (a provider named by x-gw-provider, say).
 */
export function rootContext(from: Partial<Inherited> = {}): Inherited {
  return { override_params: {}, strict_openai_compliance: true, hooks: {}, options: {}, ...from };
}

/** JSON path of a node's i-th target: `config` -> `config.targets[1]`. */
export function targetPath(parentPath: string, index: number): string {
  return `${parentPath}.targets[${index}]`;
}

export const ROOT_PATH = 'config';

function providerOptions(node: ConfigNode): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(node)) {
    if (!CONFIG_KEYS.has(key) && node[key] !== undefined) out[key] = node[key];
  }
  return out;
}

/** The context `node` hands to its targets, given what its parent handed to it. */
export function childContext(parent: Inherited, node: ConfigNode): Inherited {
  const switches =
    (node.provider !== undefined && node.provider !== parent.provider) || (node.virtual_key !== undefined && node.virtual_key !== parent.virtual_key);
  const own = providerOptions(node);

  const hooks: TargetHooks = { ...parent.hooks };
  for (const key of HOOK_KEYS) {
    const list = node[key];
    if (Array.isArray(list)) hooks[key] = list;
  }

  const next: Inherited = {
    override_params: node.override_params ? { ...parent.override_params, ...node.override_params } : parent.override_params,
    strict_openai_compliance: node.strict_openai_compliance ?? parent.strict_openai_compliance,
    hooks,
    options: switches ? own : { ...parent.options, ...own },
  };
  const provider = switches ? node.provider : (node.provider ?? parent.provider);
  const apiKey = switches ? node.api_key : (node.api_key ?? parent.api_key);
  const virtualKey = switches ? node.virtual_key : (node.virtual_key ?? parent.virtual_key);
  if (provider !== undefined) next.provider = provider;
  if (apiKey !== undefined) next.api_key = apiKey;
  if (virtualKey !== undefined) next.virtual_key = virtualKey;

  const retry = node.retry ?? parent.retry;
  const cache = node.cache ?? parent.cache;
  const timeout = node.request_timeout ?? parent.request_timeout;
  const host = node.custom_host ?? parent.custom_host;
  const forward = node.forward_headers ?? parent.forward_headers;
  const passthrough = node.passthrough ?? parent.passthrough;
  if (retry !== undefined) next.retry = retry;
  if (cache !== undefined) next.cache = cache;
  if (timeout !== undefined) next.request_timeout = timeout;
  if (host !== undefined) next.custom_host = host;
  if (forward !== undefined) next.forward_headers = forward;
  if (passthrough !== undefined) next.passthrough = passthrough;
  return next;
}

/** A leaf with everything it inherits; `inherited` is what its parent handed down. */
export function toResolvedTarget(inherited: Inherited, node: ConfigNode, path: string): RoutedTarget {
  const ctx = childContext(inherited, node);
  const target: RoutedTarget = {
    path,
    override_params: { ...ctx.override_params },
    strict_openai_compliance: ctx.strict_openai_compliance,
    options: { ...ctx.options },
    hooks: { ...ctx.hooks },
  };
  if (node.name !== undefined) target.name = node.name;
  if (ctx.provider !== undefined) target.provider = ctx.provider;
  if (ctx.api_key !== undefined) target.api_key = ctx.api_key;
  if (ctx.virtual_key !== undefined) target.virtual_key = ctx.virtual_key;
  if (ctx.retry !== undefined) target.retry = ctx.retry;
  if (ctx.request_timeout !== undefined) target.request_timeout = ctx.request_timeout;
  if (ctx.cache !== undefined) target.cache = ctx.cache;
  if (ctx.custom_host !== undefined) target.custom_host = ctx.custom_host;
  if (ctx.forward_headers !== undefined) target.forward_headers = ctx.forward_headers;
  if (ctx.passthrough !== undefined) target.passthrough = ctx.passthrough;
  return target;
}

/**
 * Every leaf of a config in document order, resolved, with its path (`config`,
 * `config.targets[0].targets[2]`). `base` is what the request contributes above the root.
 */
export function leaves(root: ConfigNode, base: Inherited = rootContext()): RoutedTarget[] {
  const out: RoutedTarget[] = [];
  const walk = (node: ConfigNode, inherited: Inherited, path: string): void => {
    const targets = node.targets;
    if (targets && targets.length > 0) {
      const ctx = childContext(inherited, node);
      targets.forEach((child, i) => walk(child, ctx, targetPath(path, i)));
    } else {
      out.push(toResolvedTarget(inherited, node, path));
    }
  };
  walk(root, base, ROOT_PATH);
  return out;
}
