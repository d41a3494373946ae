/**
 * The calls a function made, judged by its synthesized role policies as IAM would: an explicit
 * Deny wins, else some Allow statement must match the action (wildcards, case-insensitive) and the
 * resource ARN (wildcards, case-sensitive). A statement with a Condition is not taken as proof: the
 * rehearsal cannot know the request context, so such a call is reported instead of allowed.
 */
import type { AwsCall } from './aws.ts';
import type { PolicyStatement, RolePolicy, SynthFunction } from './assembly.ts';

export interface IamReport {
  /** One line per call no statement allows, naming the call and the policies to change. */
  denied: string[];
  /** `policy: action on resource` grants no recorded call used (least privilege: a warning). */
  unused: string[];
}

const list = (v: unknown): string[] => (v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);
const glob = (pattern: string, flags = '') =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
    flags,
  );
const matchesAction = (patterns: string[], action: string) => patterns.some((p) => glob(p, 'i').test(action));
const matchesResource = (patterns: string[], arn: string) => patterns.some((p) => glob(p).test(arn));

function statementMatches(s: PolicyStatement, call: AwsCall): boolean {
  const action = s.Action !== undefined ? matchesAction(list(s.Action), call.action) : !matchesAction(list(s.NotAction), call.action);
  return action && matchesResource(list(s.Resource ?? '*'), call.resource);
}

/** Whose calls are judged: a function, or a state machine (its role invokes the functions). */
export type Principal = Pick<SynthFunction, 'id' | 'policies'>;

/** Judges every call of `fn` against its policies. */
export function checkCalls(fn: Principal, calls: AwsCall[]): IamReport {
  const denied = new Set<string>();
  for (const call of calls) {
    let allowedBy: string | undefined;
    let conditional: string | undefined;
    let explicitDeny: string | undefined;
    for (const p of fn.policies) {
      for (const s of p.statements) {
        if (!statementMatches(s, call)) continue;
        if (s.Effect === 'Deny') explicitDeny ??= p.name;
        else if (s.Condition) conditional ??= p.name;
        else allowedBy ??= p.name;
      }
    }
    const what = `${fn.id} calls ${call.action} on ${call.resource} (${call.operation})`;
    if (explicitDeny) denied.add(`${what}: denied explicitly by ${explicitDeny}`);
    else if (!allowedBy) denied.add(`${what}: no statement allows it; ${hint(fn.policies, call, conditional)}`);
  }
  return { denied: [...denied], unused: unusedGrants(fn, calls) };
}

/** Names the policy to change: the one granting this action elsewhere, the one on this resource, or the role's. */
function hint(policies: RolePolicy[], call: AwsCall, conditional: string | undefined): string {
  if (conditional) return `${conditional} allows it only under a Condition the rehearsal cannot evaluate`;
  const sameAction = policies.find((p) => p.statements.some((s) => s.Effect === 'Allow' && matchesAction(list(s.Action), call.action)));
  if (sameAction) return `grant it on this resource in ${sameAction.name} (it allows ${call.action} only on ${resourcesOf(sameAction, call.action)})`;
  const sameResource = policies.find((p) => p.statements.some((s) => s.Effect === 'Allow' && matchesResource(list(s.Resource ?? '*'), call.resource)));
  return `add ${call.action} to ${sameResource?.name ?? policies[0]?.name ?? 'a policy on the function role'}`;
}

const resourcesOf = (p: RolePolicy, action: string) =>
  p.statements
    .filter((s) => s.Effect === 'Allow' && matchesAction(list(s.Action), action))
    .flatMap((s) => list(s.Resource))
    .join(', ');

/**
 * Actions granted that no recorded call used. CloudWatch Logs and X-Ray grants are the runtime's,
 * and a statement granting sqs:ReceiveMessage is the event source mapping's (Lambda polls the queue
 * with the function's role): neither is called by the code, so neither is counted.
 */
function unusedGrants(fn: Principal, calls: AwsCall[]): string[] {
  const out: string[] = [];
  for (const p of fn.policies) {
    for (const s of p.statements) {
      if (s.Effect !== 'Allow' || list(s.Action).includes('sqs:ReceiveMessage')) continue;
      const actions = list(s.Action).filter((a) => !/^(logs|xray):/i.test(a));
      const unusedActions = actions.filter((a) => !calls.some((c) => glob(a, 'i').test(c.action) && matchesResource(list(s.Resource ?? '*'), c.resource)));
      if (unusedActions.length) out.push(`${p.name}: ${unusedActions.join(', ')} on ${list(s.Resource).join(', ')}`);
    }
  }
  return out;
}
