/** Every provider the gateway knows, by id. Adding a provider is one line here plus its declaration. */
import * as local from './local.ts';
import * as native from './native-declarations.ts';
import * as wire from './openai-wire.ts';
import * as passthroughOnly from './passthrough-only.ts';
import * as retrieval from './retrieval.ts';
import type { EndpointType, ProviderDefinition } from './types.ts';

const PROVIDERS: readonly ProviderDefinition[] = [
  wire.openai,
  wire.groq,
  wire.togetherAi,
  wire.fireworksAi,
  wire.deepseek,
  wire.mistralAi,
  wire.perplexityAi,
  wire.xAi,
  wire.cerebras,
  wire.sambanova,
  wire.deepinfra,
  wire.openrouter,
  wire.novitaAi,
  wire.nebius,
  wire.hyperbolic,
  wire.lambda,
  wire.moonshot,
  wire.zhipu,
  wire.zAi,
  wire.dashscope,
  wire.siliconflow,
  wire.github,
  wire.huggingface,
  wire.anyscale,
  wire.upstage,
  wire.nscale,
  wire.featherlessAi,
  wire.inferenceNet,
  wire.nvidiaNim,
  wire.klusterAi,
  wire.ai21,
  wire.workersAi,
  retrieval.jina,
  retrieval.voyage,
  local.ollama,
  local.lmStudio,
  local.vllm,
  local.llamaCpp,
  // Reached through the passthrough only, with their key in their own format.
  passthroughOnly.stabilityAi,
  passthroughOnly.replicate,
  passthroughOnly.hfInference,
  // Native formats: translated to and from OpenAI's by providers/native/ (loaded on first use).
  native.anthropic,
  native.bedrock,
  native.google,
  native.vertexAI,
  native.azureOpenAI,
  native.azureAI,
  native.cohere,
  native.sagemaker,
];

const BY_ID: ReadonlyMap<string, ProviderDefinition> = new Map(PROVIDERS.map((p) => [p.id, p]));

export function findProvider(id: string): ProviderDefinition | undefined {
  return BY_ID.get(id.toLowerCase());
}

export const providerIds = (): string[] => PROVIDERS.map((p) => p.id);

/** Every declaration, in registry order (the provider table in docs/providers.md follows it). */
export const allProviders = (): readonly ProviderDefinition[] => PROVIDERS;

/** The providers that serve an endpoint through the unified API (`chatComplete`: the chat endpoint's). */
export const providersServing = (endpoint: EndpointType): string[] => PROVIDERS.filter((p) => p.endpoints[endpoint] !== undefined).map((p) => p.id);
