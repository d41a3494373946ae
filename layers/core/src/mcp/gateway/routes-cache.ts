/**
 * Servers as the MCP gateway reads them: `loadMcpRoute` (two table reads and a decrypt) at most
 * once per server and TTL (GW_KEY_CACHE_TTL_SECONDS, as keys and managed providers), so a warm
 * call makes no DynamoDB request. An admin change reaches every instance within the TTL.
 */
import type { CoreDeps } from '../../deps.ts';
import { loadMcpRoute, type McpRoute } from '../../store/mcp.ts';

const MAX_ENTRIES = 2_000;
/** An unknown slug is re-read sooner: a server just created should not wait a full TTL. */
const NEGATIVE_TTL_MS = 2_000;

interface Entry {
  value: Promise<McpRoute | undefined>;
  at: number;
  ttl: number;
}

export class McpRouteCache {
  readonly #deps: CoreDeps;
  readonly #entries = new Map<string, Entry>();

  constructor(deps: CoreDeps) {
    this.#deps = deps;
  }

  get(organisationId: string, slug: string): Promise<McpRoute | undefined> {
    const id = `${organisationId}/${slug}`;
    const now = this.#deps.clock.now();
    const hit = this.#entries.get(id);
    if (hit && now - hit.at < hit.ttl) return hit.value;
    const value = loadMcpRoute({ table: this.#deps.repos.table, cipher: this.#deps.cipher }, organisationId, slug);
    const entry: Entry = { value, at: now, ttl: this.#deps.config.keyCacheTtlMs };
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value as string);
    this.#entries.set(id, entry);
    value.then(
      (found) => {
        if (!found) entry.ttl = Math.min(entry.ttl, NEGATIVE_TTL_MS);
      },
      () => {
        if (this.#entries.get(id) === entry) this.#entries.delete(id);
      },
    );
    return value;
  }
}
