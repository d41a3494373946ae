/** Every check by id: the built-in `default.*` checks and the partners'. */
import type { CheckDefinition } from './contract.ts';
import { contains } from './checks/contains.ts';
import { regexMatch } from './checks/regex-match.ts';

const CHECKS: ReadonlyMap<string, CheckDefinition> = new Map([regexMatch, contains].map((c) => [c.id, c]));

export const CHECK_IDS: readonly string[] = [...CHECKS.keys()];

export function findCheck(id: string): CheckDefinition | undefined {
  return CHECKS.get(id);
}
