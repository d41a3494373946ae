/**
 * Every check by id: the built-in `default.*` checks and the partners'. One line per check. The
 * gateway imports this module lazily (with the hook runner), so no check is in its cold start.
 */
import type { CheckDefinition } from '../kernel/guardrails.ts';
import { contains } from './checks/contains.ts';
import { inlineImageUrls } from './checks/inline-images.ts';
import { jsonKeys, jsonSchema } from './checks/json.ts';
import { addPrefix, regexReplace } from './checks/mutators.ts';
import { azureContentSafety, azureShieldPrompt } from './checks/partners/azure.ts';
import { bedrockGuard } from './checks/partners/bedrock.ts';
import { lakeraGuard } from './checks/partners/lakera.ts';
import { regexMatch } from './checks/regex-match.ts';
import { requestParametersCheck } from './checks/request-parameters.ts';
import { allowedRequestTypes, modelRules, modelWhitelist, requiredMetadataKeyPairs, requiredMetadataKeys } from './checks/request.ts';
import { alllowercase, alluppercase, characterCount, containsCode, endsWith, notNull, sentenceCount, wordCount } from './checks/text.ts';
import { validUrls } from './checks/valid-urls.ts';
import { webhook } from './checks/webhook.ts';

const ALL: readonly CheckDefinition[] = [
  regexMatch,
  contains,
  sentenceCount,
  wordCount,
  characterCount,
  jsonSchema,
  jsonKeys,
  validUrls,
  containsCode,
  webhook,
  alluppercase,
  alllowercase,
  endsWith,
  modelWhitelist,
  modelRules,
  requiredMetadataKeys,
  requiredMetadataKeyPairs,
  allowedRequestTypes,
  requestParametersCheck,
  notNull,
  regexReplace,
  addPrefix,
  inlineImageUrls,
  lakeraGuard,
  azureContentSafety,
  azureShieldPrompt,
  bedrockGuard,
];

const CHECKS: ReadonlyMap<string, CheckDefinition> = new Map(ALL.map((c) => [c.id, c]));

export const CHECK_IDS: readonly string[] = [...CHECKS.keys()];

export function findCheck(id: string): CheckDefinition | undefined {
  return CHECKS.get(id);
}
