/**
 * The approximate mode of a rate limits policy (`mode: "approximate"`): each instance takes a lease
 * of `lease_size` units of the shared counter with one conditional UpdateItem, only when what it
 * holds is spent, and spends it in memory, so most requests make no DynamoDB call.
 *
 * The shared counter counts every leased unit, and a lease is never granted past the limit (a
 * refused update is followed by one for what is left), so the counter never passes the limit and
 * neither do the requests admitted. The error is the other way: units one instance holds and has
 * not spent cannot serve another, so up to (instances - 1) x lease_size units may be refused early
 * in a window. Leases are kept per counter, whose key names its window: unspent units expire with
 * the window.
 */
import type { Clock } from '../../ports/clock.ts';
import type { LimitsRepository, ReserveResult } from '../../store/limits.ts';
import type { RatePlan } from './plans.ts';

export { DEFAULT_LEASE_SIZE } from './counters.ts';

interface Lease {
  /** Units leased and not yet spent by this instance. */
  left: number;
  /** The shared counter after this instance's last lease (every instance's leases counted). */
  used: number;
  windowEnd: number;
  /** The lease being taken: concurrent requests wait for it instead of taking one each. */
  refill?: Promise<number | undefined> | undefined;
}

export type LeasedPlan = RatePlan & { lease: number };

export const isLeased = (plan: { kind: string; lease?: number | undefined }): plan is LeasedPlan => plan.kind === 'rate' && plan.lease !== undefined;

/** A lost race for the last units of a window is tried again this many times. */
const MAX_TRIES = 4;

export class LeasePool {
  readonly #repo: LimitsRepository;
  readonly #clock: Clock;
  readonly #leases = new Map<string, Lease>();
  #prunedAt = 0;

  constructor(repo: LimitsRepository, clock: Clock) {
    this.#repo = repo;
    this.#clock = clock;
  }

  /** Reserves `plan.amount` from this instance's lease, topping the lease up when it is short. */
  async take(plan: LeasedPlan): Promise<ReserveResult> {
    const lease = this.#lease(plan);
    // A request that waited for another's top-up may find it spent already: it tops up once more.
    for (let round = 0; round < 2; round++) {
      if (lease.left >= plan.amount) return this.#spend(lease, plan.amount);
      const refused = await (lease.refill ??= this.#refill(lease, plan).finally(() => (lease.refill = undefined)));
      if (lease.left >= plan.amount) return this.#spend(lease, plan.amount);
      if (refused !== undefined) return { ok: false, used: refused, item: undefined };
    }
    return { ok: false, used: lease.used - lease.left, item: undefined };
  }

  /** Gives units of a request that did not use them back to the lease; false when its window is over. */
  giveBack(plan: RatePlan, amount: number): boolean {
    const lease = this.#leases.get(plan.key.pk);
    if (!lease || lease.windowEnd <= this.#clock.now()) return false;
    lease.left += amount;
    return true;
  }

  #spend(lease: Lease, amount: number): ReserveResult {
    lease.left -= amount;
    const used = lease.used - lease.left;
    return { ok: true, used, item: { used } };
  }

  /**
   * Takes a lease of `lease_size` units (at least what the request lacks) with one conditional
   * update; past the limit, only what is left. Answers undefined when units were granted, or the
   * counter's value when not enough is left for the request.
   */
  async #refill(lease: Lease, plan: LeasedPlan): Promise<number | undefined> {
    const need = plan.amount - lease.left;
    let want = Math.max(plan.lease, need);
    let used = lease.used;
    for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
      const r = await this.#repo.reserve(plan.key, want, plan.limit, plan.set);
      used = r.used;
      if (r.ok) {
        lease.left += want;
        lease.used = r.used;
        return undefined;
      }
      const rest = plan.limit - r.used;
      if (rest < need) break;
      want = rest;
    }
    lease.used = Math.max(lease.used, used);
    return used;
  }

  #lease(plan: LeasedPlan): Lease {
    let lease = this.#leases.get(plan.key.pk);
    if (lease) return lease;
    this.#prune();
    lease = { left: 0, used: 0, windowEnd: plan.windowEnd };
    this.#leases.set(plan.key.pk, lease);
    return lease;
  }

  /** Drops the leases of windows that are over, at most once a second. */
  #prune(): void {
    const now = this.#clock.now();
    if (now - this.#prunedAt < 1_000) return;
    this.#prunedAt = now;
    for (const [pk, lease] of this.#leases) if (lease.windowEnd <= now && !lease.refill) this.#leases.delete(pk);
  }
}
