/**
 * Azure AI Content Safety: `azure.contentSafety` (`text:analyze`: fails when a category's severity
 * reaches `severity`, default 2, or a blocklist matched) and `azure.shieldPrompt` (Prompt Shields,
 * `text:shieldPrompt`: fails when an attack is detected in the prompt or a document). The key goes
 * in `Ocp-Apim-Subscription-Key`; `credentials.endpoint` replaces
 * `https://{resourceName}.cognitiveservices.azure.com` (private endpoints).
 */
import type { CheckDeps, CheckDefinition } from '../../../kernel/guardrails.ts';
import { isRecord, num, paramValidator, str, strings, type ParamSpec } from '../params.ts';
import { errored, httpUrl, postJson, RemoteCheckError, timeoutRule } from '../remote.ts';
import { checkedText } from '../text-of.ts';

export const AZURE_CATEGORIES = ['Hate', 'SelfHarm', 'Sexual', 'Violence'] as const;

const credentialsSpec: ParamSpec = {
  credentials: {
    type: 'object',
    required: true,
    fields: {
      resourceName: { type: 'string', nonEmpty: true, check: (v) => (/^[a-z0-9][a-z0-9-]{0,62}$/i.test(v) ? null : 'must be an Azure resource name') },
      apiKey: { type: 'string', required: true, nonEmpty: true },
      endpoint: httpUrl,
    },
  },
  apiVersion: { type: 'string', nonEmpty: true, check: (v) => (/^\d{4}-\d{2}-\d{2}(-preview)?$/.test(v) ? null : 'must be an API version such as 2024-09-01') },
  timeout: timeoutRule,
};

const needsEndpoint = (p: Readonly<Record<string, unknown>>) => {
  const c = isRecord(p.credentials) ? p.credentials : {};
  return c.resourceName === undefined && c.endpoint === undefined
    ? [{ path: 'credentials.resourceName', message: 'resourceName or endpoint is required' }]
    : [];
};

async function callAzure(
  deps: CheckDeps,
  p: Readonly<Record<string, unknown>>,
  operation: string,
  defaultVersion: string,
  body: unknown,
): Promise<Record<string, unknown>> {
  const c = p.credentials as Record<string, unknown>;
  const base = str(c.endpoint, `https://${str(c.resourceName)}.cognitiveservices.azure.com`).replace(/\/+$/, '');
  const url = `${base}/contentsafety/text:${operation}?api-version=${encodeURIComponent(str(p.apiVersion, defaultVersion))}`;
  const answer = await postJson(deps, 'Azure AI Content Safety', url, body, {
    headers: { 'ocp-apim-subscription-key': str(c.apiKey) },
    timeoutMs: num(p.timeout, 5000),
  });
  if (!isRecord(answer)) throw new RemoteCheckError('Azure AI Content Safety answered something other than an object');
  return answer;
}

export const azureContentSafety: CheckDefinition = {
  id: 'azure.contentSafety',
  events: ['beforeRequestHook', 'afterRequestHook'],
  validate: paramValidator(
    {
      ...credentialsSpec,
      categories: { type: 'strings', values: AZURE_CATEGORIES },
      blocklistNames: { type: 'strings' },
      severity: { type: 'number', integer: true, min: 0, max: 7 },
    },
    needsEndpoint,
  ),
  async run(ctx, p, deps) {
    const categories = strings(p.categories);
    const body: Record<string, unknown> = { text: checkedText(ctx).slice(0, 10_000), categories: categories.length ? categories : [...AZURE_CATEGORIES] };
    if (Array.isArray(p.blocklistNames)) body.blocklistNames = p.blocklistNames;
    try {
      const answer = await callAzure(deps, p, 'analyze', '2024-11-01', body);
      const threshold = num(p.severity, 2);
      const analysis = Array.isArray(answer.categoriesAnalysis) ? answer.categoriesAnalysis.filter(isRecord) : [];
      const flagged = analysis.filter((a) => typeof a.severity === 'number' && a.severity >= threshold).map((a) => String(a.category));
      const blocklists = Array.isArray(answer.blocklistsMatch) ? answer.blocklistsMatch.length : 0;
      return { verdict: flagged.length === 0 && blocklists === 0, data: { flagged_categories: flagged, blocklist_matches: blocklists, threshold } };
    } catch (err) {
      return errored(p, err);
    }
  },
};

export const azureShieldPrompt: CheckDefinition = {
  id: 'azure.shieldPrompt',
  events: ['beforeRequestHook'],
  validate: paramValidator({ ...credentialsSpec, documents: { type: 'strings' } }, needsEndpoint),
  async run(ctx, p, deps) {
    try {
      // Tool results are third-party content, which Prompt Shields screens as documents (indirect attacks).
      const documents = [...ctx.request.parts.filter((t) => t.role === 'tool').map((t) => t.text), ...strings(p.documents)];
      const userPrompt = ctx.request.parts
        .filter((t) => t.role !== 'tool')
        .map((t) => t.text)
        .join('\n');
      const answer = await callAzure(deps, p, 'shieldPrompt', '2024-09-01', { userPrompt, documents });
      const prompt = isRecord(answer.userPromptAnalysis) && answer.userPromptAnalysis.attackDetected === true;
      const docs = Array.isArray(answer.documentsAnalysis) ? answer.documentsAnalysis.filter((d) => isRecord(d) && d.attackDetected === true).length : 0;
      return { verdict: !prompt && docs === 0, data: { prompt_attack: prompt, document_attacks: docs } };
    } catch (err) {
      return errored(p, err);
    }
  },
};
