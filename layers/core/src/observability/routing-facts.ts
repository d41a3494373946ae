/** Facts about a request's routing that its log records: where the config came from, and fallbacks. */
import type { GatewayRecord } from '../kernel/lifecycle.ts';
import type { ConfigNode } from '../kernel/routing.ts';
import type { Principal } from '../kernel/principal.ts';

/** `path` is the answering target's path, e.g. `config.targets[1].targets[0]`. */
export function answeredByFallback(config: ConfigNode | undefined, path: string | undefined): boolean {
  if (!config || !path) return false;
  let node: ConfigNode | undefined = config;
  for (const m of path.matchAll(/\.targets\[(\d+)\]/g)) {
    if (!node) return false;
    const i = Number(m[1]);
    if (i > 0 && node.strategy?.mode === 'fallback') return true;
    node = node.targets?.[i];
  }
  return false;
}

/** The config's origin as resolveConfig chose it: a header's inline JSON or saved config, the key's default, or plain headers. */
export function configOrigin(headers: Headers, principal: Principal, fromHeaders: boolean): Pick<GatewayRecord, 'configSource' | 'configId'> {
  if (fromHeaders) return { configSource: 'headers' };
  const sent = headers.get('x-gw-config')?.trim();
  if (sent) return sent.startsWith('{') ? { configSource: 'inline' } : { configSource: 'saved', configId: sent };
  const pinned = principal.defaults?.config_id;
  return pinned ? { configSource: 'key', configId: pinned } : {};
}
