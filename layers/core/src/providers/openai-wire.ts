/**
 * Hosted providers that speak OpenAI's wire format: one declaration each, base URL and endpoint
 * paths as each provider documents them (sources in docs/providers.md). All take the key as
 * `Authorization: Bearer`. An endpoint not listed answers 400 naming the provider; any other path
 * can still be reached through the passthrough.
 */
import { AUDIO, BATCHES, CHAT, FILES, openAICompatible, openAIPaths, TEXT } from './openai-compatible.ts';

export const openai = openAICompatible('openai', 'OpenAI', 'https://api.openai.com/v1', {
  optionHeaders: { openai_organization: 'OpenAI-Organization', openai_project: 'OpenAI-Project' },
});

export const groq = openAICompatible('groq', 'Groq', 'https://api.groq.com/openai/v1', {
  endpoints: openAIPaths(...CHAT, ...AUDIO, ...FILES, ...BATCHES, 'createModelResponse'),
});

export const togetherAi = openAICompatible('together-ai', 'Together AI', 'https://api.together.ai/v1', {
  endpoints: openAIPaths(...TEXT, 'embed', 'imageGenerate', 'rerank', ...AUDIO, ...FILES, ...BATCHES),
});

export const fireworksAi = openAICompatible('fireworks-ai', 'Fireworks AI', 'https://api.fireworks.ai/inference/v1', {
  endpoints: openAIPaths(...TEXT, 'embed'),
});

export const deepseek = openAICompatible('deepseek', 'DeepSeek', 'https://api.deepseek.com', {
  // Text (fill-in-the-middle) completions are served under the beta prefix only.
  endpoints: { ...openAIPaths(...CHAT), complete: '/beta/completions' },
});

export const mistralAi = openAICompatible('mistral-ai', 'Mistral AI', 'https://api.mistral.ai/v1', {
  // Text completions are Codestral's fill-in-the-middle (prompt + suffix); its answer is chat-shaped.
  endpoints: { ...openAIPaths(...CHAT, 'embed', 'moderate', ...FILES), complete: '/fim/completions' },
});

export const perplexityAi = openAICompatible('perplexity-ai', 'Perplexity', 'https://api.perplexity.ai', {
  // Sonar answers at /chat/completions; the Agent API's Responses alias lives under /v1.
  endpoints: { chatComplete: '/chat/completions', createModelResponse: '/v1/responses' },
});

export const xAi = openAICompatible('x-ai', 'xAI', 'https://api.x.ai/v1', {
  endpoints: openAIPaths(...TEXT, 'imageGenerate', 'createModelResponse', 'getModelResponse', 'deleteModelResponse'),
});

export const cerebras = openAICompatible('cerebras', 'Cerebras', 'https://api.cerebras.ai/v1', {
  endpoints: openAIPaths(...TEXT),
});

export const sambanova = openAICompatible('sambanova', 'SambaNova', 'https://api.sambanova.ai/v1', {
  endpoints: openAIPaths(...TEXT, 'embed', 'createTranscription', 'createTranslation', 'createModelResponse'),
});

export const deepinfra = openAICompatible('deepinfra', 'DeepInfra', 'https://api.deepinfra.com/v1/openai', {
  endpoints: openAIPaths(...TEXT, 'embed', 'imageGenerate', ...AUDIO),
});

export const openrouter = openAICompatible('openrouter', 'OpenRouter', 'https://openrouter.ai/api/v1', {
  endpoints: openAIPaths(...TEXT, 'createModelResponse'),
});

export const novitaAi = openAICompatible('novita-ai', 'Novita AI', 'https://api.novita.ai/openai/v1', {
  endpoints: openAIPaths(...TEXT, 'embed'),
});

export const nebius = openAICompatible('nebius', 'Nebius Token Factory', 'https://api.tokenfactory.nebius.com/v1', {
  endpoints: openAIPaths(...TEXT, 'embed', 'imageGenerate', ...FILES, ...BATCHES),
});

export const hyperbolic = openAICompatible('hyperbolic', 'Hyperbolic', 'https://api.hyperbolic.xyz/v1', {
  endpoints: openAIPaths(...TEXT),
});

export const lambda = openAICompatible('lambda', 'Lambda', 'https://api.lambda.ai/v1', {
  endpoints: openAIPaths(...TEXT),
});

export const moonshot = openAICompatible('moonshot', 'Moonshot AI (Kimi)', 'https://api.moonshot.ai/v1', {
  endpoints: openAIPaths(...CHAT, 'createModelResponse', ...FILES, ...BATCHES),
});

export const zhipu = openAICompatible('zhipu', 'Zhipu AI (BigModel)', 'https://open.bigmodel.cn/api/paas/v4', {
  endpoints: openAIPaths('chatComplete', 'embed', 'imageGenerate'),
});

export const zAi = openAICompatible('z-ai', 'Z.AI', 'https://api.z.ai/api/paas/v4', {
  endpoints: openAIPaths('chatComplete', 'imageGenerate'),
});

export const dashscope = openAICompatible('dashscope', 'Alibaba Cloud Model Studio (DashScope)', 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1', {
  endpoints: openAIPaths(...CHAT, 'embed'),
});

export const siliconflow = openAICompatible('siliconflow', 'SiliconFlow', 'https://api.siliconflow.cn/v1', {
  endpoints: openAIPaths(...CHAT, 'embed', 'rerank', 'imageGenerate', 'createSpeech', 'createTranscription'),
});

export const github = openAICompatible('github', 'GitHub Models', 'https://models.github.ai/inference', {
  endpoints: openAIPaths('chatComplete', 'embed'),
});

export const huggingface = openAICompatible('huggingface', 'Hugging Face Inference Providers', 'https://router.huggingface.co/v1', {
  endpoints: openAIPaths(...CHAT),
});

export const anyscale = openAICompatible('anyscale', 'Anyscale Endpoints', 'https://api.endpoints.anyscale.com/v1', {
  endpoints: openAIPaths(...TEXT, 'embed'),
});

export const upstage = openAICompatible('upstage', 'Upstage', 'https://api.upstage.ai/v1', {
  endpoints: openAIPaths(...CHAT, 'embed'),
});

export const nscale = openAICompatible('nscale', 'Nscale', 'https://inference.api.nscale.com/v1', {
  endpoints: openAIPaths(...CHAT, 'imageGenerate'),
});

export const featherlessAi = openAICompatible('featherless-ai', 'Featherless AI', 'https://api.featherless.ai/v1', {
  endpoints: openAIPaths(...TEXT),
});

export const inferenceNet = openAICompatible('inference-net', 'Inference.net', 'https://api.inference.net/v1', {
  endpoints: openAIPaths(...CHAT),
});

export const nvidiaNim = openAICompatible('nvidia-nim', 'NVIDIA NIM', 'https://integrate.api.nvidia.com/v1', {
  endpoints: openAIPaths(...TEXT, 'embed'),
});

export const klusterAi = openAICompatible('kluster-ai', 'kluster.ai', 'https://api.kluster.ai/v1', {
  endpoints: openAIPaths(...TEXT, ...FILES, ...BATCHES),
});

export const ai21 = openAICompatible('ai21', 'AI21 Labs', 'https://api.ai21.com/studio/v1', {
  endpoints: openAIPaths(...CHAT),
});

/** The account id is part of the base URL: `workers_ai_account_id` (or `x-gw-workers-ai-account-id`) fills it. */
export const workersAi = openAICompatible(
  'workers-ai',
  'Cloudflare Workers AI',
  'https://api.cloudflare.com/client/v4/accounts/{workers_ai_account_id}/ai/v1',
  {
    endpoints: openAIPaths('chatComplete', 'embed'),
  },
);
