/**
 * Which config a request runs: `x-gw-config` (inline JSON, or a saved config's id or slug), else
 * the key's default config, else a single target built from `x-gw-provider` / `x-gw-custom-host`.
 */
import type { CoreDeps } from '../../deps.ts';
import { ForbiddenError, ValidationError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import type { ConfigNode } from '../../kernel/routing.ts';
import { parseConfigHeader } from './validate.ts';

export interface ResolvedConfig {
  config: ConfigNode;
  /** `x-gw-provider` alongside a config: the provider its targets inherit unless they name one. */
  headerProvider?: string;
  /** The config was made from headers: errors name the headers. */
  fromHeaders: boolean;
}

/** Headers that would route around a config: a key that pins its config without overrides refuses each. */
const OVERRIDING_HEADERS = ['x-gw-config', 'x-gw-provider', 'x-gw-custom-host', 'x-gw-virtual-key'] as const;

function refuseOverrides(headers: Headers, principal: Principal): void {
  if (!principal.defaults?.config_id || principal.defaults.allow_config_override !== false) return;
  for (const name of OVERRIDING_HEADERS) {
    if (headers.get(name)?.trim()) throw new ForbiddenError(`This API key pins its config and does not allow ${name} overrides`, { param: name });
  }
}

/**
 * Inline configs by their text. Clients send the same `x-gw-config` on every call: parsing and
 * validating it (and checking its hooks, remembered per object) then happens once per instance.
 * Bounded in entries and in the size of a config kept; configs are never changed downstream (saved
 * configs are shared cached objects too).
 */
const INLINE_MEMO_ENTRIES = 256;
const INLINE_MEMO_MAX_CHARS = 8_192;
const inlineConfigs = new Map<string, ConfigNode>();

function inlineConfig(raw: string, requestProvider: boolean): ConfigNode {
  const key = (requestProvider ? 'p' : '-') + raw;
  const known = inlineConfigs.get(key);
  if (known) return known;
  const config = parseConfigHeader(raw, { requestProvider });
  if (raw.length <= INLINE_MEMO_MAX_CHARS) {
    if (inlineConfigs.size >= INLINE_MEMO_ENTRIES) inlineConfigs.delete(inlineConfigs.keys().next().value as string);
    inlineConfigs.set(key, deepFreeze(config));
  }
  return config;
}

export async function resolveConfig(headers: Headers, principal: Principal, deps: CoreDeps): Promise<ResolvedConfig> {
  refuseOverrides(headers, principal);
  const sent = headers.get('x-gw-config')?.trim();
  const pinned = principal.defaults?.config_id;
  const raw = sent || pinned;
  const provider = headers.get('x-gw-provider') ?? undefined;
  // x-gw-virtual-key (legacy): the config's root uses it unless it names its own provider, as with
  // x-gw-provider; a managed `x-gw-provider: @slug` wins over it.
  const virtualKey = headers.get('x-gw-virtual-key')?.trim() || undefined;
  const withVirtualKey = (c: ConfigNode): ConfigNode =>
    virtualKey && !provider?.startsWith('@') && c.provider === undefined && c.virtual_key === undefined ? { ...c, virtual_key: virtualKey } : c;
  if (raw) {
    const headerProvider = provider ? { headerProvider: provider } : {};
    if (raw.startsWith('{')) {
      try {
        const config = inlineConfig(raw, provider !== undefined || virtualKey !== undefined);
        return { config: withVirtualKey(config), fromHeaders: false, ...headerProvider };
      } catch (err) {
        // Config problems carry the admin code AB01 and every path, also on the gateway.
        if (err instanceof ValidationError) throw new ValidationError(err.problems, { param: 'x-gw-config', openaiCode: 'AB01' });
        throw err;
      }
    }
    const saved = await deps.savedConfigs.forGateway(principal, raw);
    if (!saved) throw ValidationError.field('x-gw-config', `no saved config "${raw}" in this workspace`);
    return { config: withVirtualKey(saved), fromHeaders: false, ...headerProvider };
  }
  const customHost = headers.get('x-gw-custom-host') ?? undefined;
  return {
    config: { ...(provider ? { provider } : {}), ...(customHost ? { custom_host: customHost } : {}), ...(virtualKey ? { virtual_key: virtualKey } : {}) },
    fromHeaders: true,
  };
}

/** A remembered config is shared by requests: frozen, so a change to it fails loudly instead of leaking. */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
