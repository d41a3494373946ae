/**
 * Saved configs as the gateway reads them: cached in-process for a few seconds (so a warm config
 * costs no DynamoDB call) and dropped at once when this process changes one. Other Lambda
 * instances see a change within the TTL.
 */
import type { Principal } from '../../kernel/principal.ts';
import type { Cipher } from '../../ports/cipher.ts';
import type { Clock } from '../../ports/clock.ts';
import { configSecretContext, openConfigSecrets } from '../../store/config-secrets.ts';
import type { ConfigRepository } from '../../store/configs.ts';
import type { ConfigNode } from '../../kernel/routing.ts';
import { parseConfig } from './validate.ts';

/** Reads a saved config for a gateway request, by id or slug, within the caller's workspace. */
export interface SavedConfigSource {
  forGateway(principal: Principal, idOrSlug: string): Promise<ConfigNode | undefined>;
  /** Drops cached configs after this process changed one. */
  invalidate(): void;
}

interface Entry {
  config: ConfigNode | undefined;
  workspaceId: string | undefined;
  at: number;
}

export class SavedConfigCache implements SavedConfigSource {
  readonly #repo: ConfigRepository;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #cipher: Cipher;
  readonly #entries = new Map<string, Entry>();

  constructor(repo: ConfigRepository, clock: Clock, ttlMs: number, cipher: Cipher) {
    this.#repo = repo;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
    this.#cipher = cipher;
  }

  async forGateway(principal: Principal, idOrSlug: string): Promise<ConfigNode | undefined> {
    const key = `${principal.organisationId}/${idOrSlug}`;
    const now = this.#clock.now();
    let entry = this.#entries.get(key);
    if (!entry || now - entry.at >= this.#ttlMs) {
      let rec: Awaited<ReturnType<ConfigRepository['resolve']>>;
      try {
        rec = await this.#repo.resolve(principal.organisationId, idOrSlug);
      } catch (err) {
        // The table cannot be read (health says degraded): a config read before keeps serving meanwhile.
        if (!entry) throw err;
        return entry.workspaceId === principal.workspaceId ? entry.config : undefined;
      }
      // Re-validated on load: a config stored before a validator change must not crash the engine.
      const usable = rec && rec.status === 'active' ? parseConfig(await openConfigSecrets(rec.config, this.#cipher, configSecretContext(rec))) : undefined;
      entry = { config: usable, workspaceId: rec?.workspace_id, at: now };
      if (this.#entries.size > 5_000) this.#entries.clear();
      this.#entries.set(key, entry);
    }
    return entry.workspaceId === principal.workspaceId ? entry.config : undefined;
  }

  invalidate(): void {
    this.#entries.clear();
  }
}
