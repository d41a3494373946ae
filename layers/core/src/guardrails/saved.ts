/**
 * Saved guardrails as the gateway reads them: cached in-process for a few seconds (a warm
 * guardrail costs no DynamoDB call) and dropped at once when this process changes one. Other
 * Lambda instances see a change within the TTL. A workspace sees its own and the organisation's.
 */
import type { Principal } from '../kernel/principal.ts';
import type { Clock } from '../ports/clock.ts';
import type { GuardrailRecord, GuardrailRepository } from '../store/guardrails.ts';
import type { GuardrailSource, SavedGuardrail } from '../kernel/guardrails.ts';

interface Entry {
  rec: GuardrailRecord | undefined;
  at: number;
}

const visible = (rec: GuardrailRecord | undefined, principal: Principal): SavedGuardrail | undefined => {
  if (!rec || rec.status !== 'active') return undefined;
  if (rec.workspace_id !== null && rec.workspace_id !== principal.workspaceId) return undefined;
  return { id: rec.id, slug: rec.slug, version_id: rec.version_id, name: rec.name, checks: rec.checks, actions: rec.actions };
};

export class SavedGuardrailCache implements GuardrailSource {
  readonly #repo: GuardrailRepository;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #entries = new Map<string, Entry>();

  constructor(repo: GuardrailRepository, clock: Clock, ttlMs: number) {
    this.#repo = repo;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
  }

  async forGateway(principal: Principal, idOrSlug: string): Promise<SavedGuardrail | undefined> {
    const key = `${principal.organisationId}/${idOrSlug}`;
    const now = this.#clock.now();
    let entry = this.#entries.get(key);
    if (!entry || now - entry.at >= this.#ttlMs) {
      try {
        entry = { rec: await this.#repo.resolve(principal.organisationId, idOrSlug), at: now };
      } catch (err) {
        // The table cannot be read: a guardrail read before keeps being enforced meanwhile.
        if (!entry) throw err;
        return visible(entry.rec, principal);
      }
      if (this.#entries.size > 5_000) this.#entries.clear();
      this.#entries.set(key, entry);
    }
    return visible(entry.rec, principal);
  }

  invalidate(): void {
    this.#entries.clear();
  }
}
