/**
 * Model servers that run on the caller's own machine or cluster. They speak OpenAI's wire format
 * but have no public address: every request names one with `x-gw-custom-host` (or a target's
 * `custom_host`), which must be allowed by GW_TRUSTED_CUSTOM_HOSTS when it is private. The base URL
 * below is each server's documented default, used only in the error that asks for a host.
 */
import { openAICompatible, openAIPaths, TEXT } from './openai-compatible.ts';

const local = { requiresCustomHost: true } as const;

export const ollama = openAICompatible('ollama', 'Ollama', 'http://localhost:11434/v1', {
  ...local,
  endpoints: openAIPaths(...TEXT, 'embed'),
});

export const lmStudio = openAICompatible('lm-studio', 'LM Studio', 'http://localhost:1234/v1', {
  ...local,
  endpoints: openAIPaths(...TEXT, 'embed', 'createModelResponse'),
});

export const vllm = openAICompatible('vllm', 'vLLM', 'http://localhost:8000/v1', {
  ...local,
  endpoints: openAIPaths(...TEXT, 'embed', 'rerank', 'createTranscription', 'createModelResponse'),
});

export const llamaCpp = openAICompatible('llama-cpp', 'llama.cpp server', 'http://localhost:8080/v1', {
  ...local,
  endpoints: openAIPaths(...TEXT, 'embed', 'rerank'),
});
