/**
 * The active policies of a workspace, and the workspace's own limits, as the gateway reads them:
 * from memory, so a warm workspace costs no DynamoDB call. After `ttlMs` the cached list is still served while one background read
 * refreshes it; past `maxStaleMs` it is re-read before use. Changes made through this process are
 * applied at once (`invalidate`); other instances see them within about one TTL.
 */
import type { Clock } from '../../ports/clock.ts';
import type { LimitsRepository, RateLimitPolicyRecord, UsageLimitPolicyRecord } from '../../store/limits.ts';
import { NO_ATTACHED, type AttachedLimits } from '../../kernel/limits.ts';

export interface WorkspacePolicies {
  rate: readonly RateLimitPolicyRecord[];
  usage: readonly UsageLimitPolicyRecord[];
  /** The workspace's own `usage_limits` and `rate_limits`. */
  workspace: AttachedLimits;
}

/** Reads a workspace's own limits (its record's `usage_limits` and `rate_limits`). */
export type WorkspaceLimitsReader = (organisationId: string, workspaceId: string) => Promise<AttachedLimits>;

export const isEmpty = (p: WorkspacePolicies): boolean =>
  p.rate.length === 0 && p.usage.length === 0 && p.workspace.usage.length === 0 && p.workspace.rate.length === 0;

interface Entry {
  policies: WorkspacePolicies;
  at: number;
  refreshing: boolean;
}

const MAX_WORKSPACES = 10_000;

export class PolicyCache {
  readonly #repo: LimitsRepository;
  readonly #readWorkspace: WorkspaceLimitsReader;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxStaleMs: number;
  readonly #entries = new Map<string, Entry>();
  /** Reads in flight, so a burst on a cold workspace makes one read, not one per request. */
  readonly #loading = new Map<string, Promise<Entry>>();
  /** Bumped by every invalidate: a read that started before it must not be cached. */
  #generation = 0;

  constructor(repo: LimitsRepository, clock: Clock, ttlMs: number, readWorkspace: WorkspaceLimitsReader = () => Promise.resolve(NO_ATTACHED)) {
    this.#repo = repo;
    this.#readWorkspace = readWorkspace;
    this.#clock = clock;
    this.#ttlMs = ttlMs;
    this.#maxStaleMs = Math.max(ttlMs * 6, 60_000);
  }

  async forWorkspace(organisationId: string, workspaceId: string): Promise<WorkspacePolicies> {
    const now = this.#clock.now();
    const entry = this.#entries.get(workspaceId);
    const age = entry ? now - entry.at : Infinity;
    if (!entry || age >= this.#maxStaleMs || this.#ttlMs === 0) {
      try {
        return (await this.#load(organisationId, workspaceId)).policies;
      } catch (err) {
        // The table cannot be read (health says degraded): policies read before keep applying meanwhile.
        if (!entry) throw err;
        return entry.policies;
      }
    }
    if (age >= this.#ttlMs && !entry.refreshing) {
      entry.refreshing = true;
      this.#load(organisationId, workspaceId)
        .catch(() => undefined)
        .finally(() => {
          entry.refreshing = false;
        });
    }
    return entry.policies;
  }

  /** Drops one workspace's policies, or all of them. */
  invalidate(workspaceId?: string): void {
    this.#generation++;
    if (workspaceId === undefined) this.#entries.clear();
    else this.#entries.delete(workspaceId);
  }

  #load(organisationId: string, workspaceId: string): Promise<Entry> {
    const generation = this.#generation;
    const key = `${generation}\u0000${workspaceId}`;
    let loading = this.#loading.get(key);
    if (!loading) {
      loading = this.#read(organisationId, workspaceId, generation).finally(() => this.#loading.delete(key));
      this.#loading.set(key, loading);
    }
    return loading;
  }

  async #read(organisationId: string, workspaceId: string, generation: number): Promise<Entry> {
    const [all, workspace] = await Promise.all([this.#repo.listWorkspace(workspaceId, organisationId), this.#readWorkspace(organisationId, workspaceId)]);
    const entry: Entry = {
      policies: { rate: all.rate.filter((p) => p.status === 'active'), usage: all.usage.filter((p) => p.status === 'active'), workspace },
      at: this.#clock.now(),
      refreshing: false,
    };
    if (generation !== this.#generation) return entry;
    if (this.#entries.size >= MAX_WORKSPACES && !this.#entries.has(workspaceId)) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(workspaceId, entry);
    return entry;
  }
}
