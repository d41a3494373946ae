/** The limits feature as one object in CoreDeps: policies (cached), counters, the hook, alerts. */
import type { Logger } from '../../ports/logger.ts';
import type { AppConfig } from '../../config.ts';
import type { Clock } from '../../ports/clock.ts';
import type { QueueFactory } from '../../ports/queue-factory.ts';
import type { PriceBook } from '../../pricing/price-book.ts';
import { IdentityRepository } from '../../store/identity.ts';
import { Provider, providerKey } from '../../store/integrations.ts';
import { LimitsRepository } from '../../store/limits.ts';
import type { Repositories } from '../../store/repositories.ts';
import { ALERTS_QUEUE, type AlertRecipients, type AlertSubjectReader, type UsageAlert } from './alerts.ts';
import { parseAttached } from '../../kernel/limits.ts';
import { DEFAULT_COST_ESTIMATOR, type CostEstimator } from './estimate.ts';
import { LimitsHook } from './hook.ts';
import { PolicyCache } from './policy-cache.ts';
import { priceBookEstimator } from './pricing-estimator.ts';

export interface LimitsRuntime {
  repo: LimitsRepository;
  policies: PolicyCache;
  hook: LimitsHook;
  /** Prices tokens for cost budgets. */
  costs: CostEstimator;
  /** Alert recipients beyond the budget's own `alert_emails`. */
  recipients: AlertRecipients;
  /** What an alert is about (a policy, a key, a workspace), read when it is mailed. */
  subjects: AlertSubjectReader;
}

export interface LimitsInput {
  repos: Repositories;
  clock: Clock;
  config: AppConfig;
  queues: QueueFactory;
  logger: Logger;
  pricing?: PriceBook;
}

/**
 * Organisation owners and admins, and the workspace's managers, from the users directory (docs/design/spec.md#events:
 * organisation admins, workspace admins and managers).
 */
export function directoryRecipients(repos: Repositories): AlertRecipients {
  const identity = new IdentityRepository(repos.table);
  return {
    async forWorkspace(organisationId, workspaceId) {
      const [users, members] = await Promise.all([identity.listUsers(organisationId), identity.listMembers(organisationId, workspaceId)]);
      const byId = new Map(users.map((u) => [u.id, u]));
      const out = users.filter((u) => u.role === 'owner' || u.role === 'admin').map((u) => u.email);
      for (const m of members) {
        const user = m.role === 'manager' ? byId.get(m.user_id) : undefined;
        if (user) out.push(user.email);
      }
      return out;
    },
  };
}

export function tableSubjects(repos: Repositories, limits: LimitsRepository): AlertSubjectReader {
  return async (a) => {
    if (a.source === 'policy') {
      const p = await limits.getUsage(a.organisation_id, a.source_id);
      return p && p.status === 'active' ? { title: `usage limits policy "${p.name ?? p.id}"`, alert_emails: p.alert_emails } : undefined;
    }
    if (a.source === 'api_key') {
      const k = await repos.apiKeys.getById(a.organisation_id, a.source_id);
      return k ? { title: `API key "${k.name}"`, alert_emails: k.alert_emails ?? [] } : undefined;
    }
    if (a.source === 'provider') {
      const p = await repos.table.get(Provider, providerKey(a.organisation_id, a.workspace_id, a.source_id), true);
      return p ? { title: `provider "@${p.slug}" (${p.name})`, alert_emails: [] } : undefined;
    }
    const ws = await repos.workspaces.getById(a.organisation_id, a.source_id);
    return ws ? { title: `workspace "${ws.name}"`, alert_emails: [] } : undefined;
  };
}

export function createLimits(input: LimitsInput): LimitsRuntime {
  const repo = new LimitsRepository(input.repos.table);
  const ttl = input.config.keyCacheTtlMs;
  const policies = new PolicyCache(repo, input.clock, ttl, async (org, ws) => {
    const rec = await input.repos.workspaces.getById(org, ws);
    return parseAttached(rec?.usage_limits, rec?.rate_limits);
  });
  const runtime: LimitsRuntime = {
    repo,
    policies,
    costs: input.pricing ? priceBookEstimator(input.pricing, () => input.clock.now(), Math.max(ttl, 1_000)) : DEFAULT_COST_ESTIMATOR,
    recipients: directoryRecipients(input.repos),
    subjects: tableSubjects(input.repos, repo),
    hook: new LimitsHook({
      repo,
      policies,
      clock: input.clock,
      features: input.config.features,
      costs: () => runtime.costs,
      alert: (a: UsageAlert) => input.queues.get<UsageAlert>(ALERTS_QUEUE).send(a),
      logger: input.logger,
    }),
  };
  return runtime;
}
