/**
 * A warm prompt render, in process: a message-list template with a partial and a section, through
 * `PromptRenderer` over an in-process `PromptSource` (the store's own caches answer a warm
 * instance the same way, without a table read). Budget: 1 ms p99 (issue 17).
 */
import type { Principal } from '../../layers/core/src/kernel/principal.ts';
import type { PartialVersion, PromptSource, PromptVersion } from '../../layers/core/src/prompts/contract.ts';
import { PromptRenderer } from '../../layers/core/src/prompts/render.ts';

const TEMPLATE = JSON.stringify([
  { role: 'system', content: 'You are the support assistant of {{company}}. {{>tone}}{{#rules}}\n- {{.}}{{/rules}}' },
  { role: 'user', content: [{ type: 'text', text: 'Customer {{customer.name}} ({{customer.plan}}) asks: {{question}}' }] },
]);

const VERSION: PromptVersion = {
  promptId: 'bench',
  slug: 'bench',
  versionId: 'bench-v1',
  version: 1,
  template: TEMPLATE,
  parameters: { temperature: 0.2, max_tokens: 256 },
  model: 'gpt-4o-mini',
  provider: null,
  functions: null,
  tools: null,
  toolChoice: null,
  isRawTemplate: false,
  lenient: false,
};
const TONE: PartialVersion = { partialId: 'tone', slug: 'tone', versionId: 'tone-v1', version: 1, content: 'Answer in a {{tone}} tone.' };

const source: PromptSource = {
  prompt: async () => VERSION,
  partial: async () => TONE,
  invalidate: () => undefined,
};

const principal = { workspaceId: 'bench' } as Principal;
const variables = {
  company: 'Acme',
  tone: 'friendly',
  rules: ['Be brief', 'Never guess prices', 'Link the docs'],
  customer: { name: 'Ada', plan: 'pro' },
  question: 'How do I rotate my API key?',
};

export interface PromptRenderResult {
  iterations: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export async function benchPromptRender(iterations = 20_000): Promise<PromptRenderResult> {
  const renderer = new PromptRenderer(source);
  const input = { variables, hyperparameters: { temperature: 0.7 } };
  for (let i = 0; i < 2_000; i++) await renderer.render(principal, 'bench', input);
  const samples = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const start = process.hrtime.bigint();
    await renderer.render(principal, 'bench', input);
    samples[i] = Number(process.hrtime.bigint() - start) / 1e6;
  }
  samples.sort();
  const at = (q: number) => Math.round((samples[Math.min(iterations - 1, Math.floor(q * iterations))] ?? NaN) * 1000) / 1000;
  return { iterations, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1) };
}
