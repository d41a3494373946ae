/**
 * Amazon Bedrock: chat through Converse / ConverseStream (one format for every model family),
 * embeddings and images through InvokeModel (Titan, Cohere, Stability), rerank through the agent
 * runtime's Rerank API. Model ids may be foundation models, cross-region inference profiles
 * (`us.anthropic.claude-...`) or ARNs (application inference profiles), URL-encoded in the path.
 */
import { ValidationError } from '../../http/errors.ts';
import type { OpenAIErrorBody } from '../../http/errors.ts';
import type { ChatUsage, FinishReason, NativeProvider, ProviderRequestContext, ResponseMeta, StreamTransformer } from '../transform.ts';
import * as declared from '../native-declarations.ts';
import { defineNative } from './define.ts';
import { awsCredentials, awsRegion, signAws } from './aws.ts';
import { isRecord } from '../../http/json.ts';
import {
  embeddingInputs,
  joinText,
  JSON_OBJECT_INSTRUCTION,
  parseArguments,
  readChatInput,
  refuseUnsupported,
  unsupportedParam,
  type MediaPart,
  type TextPart,
  type UserPart,
} from './chat-input.ts';
import {
  ChoiceBuilder,
  ChunkWriter,
  chatCompletion,
  documentText,
  embeddingList,
  errorSnippet,
  JSON_TOOL,
  jsonViaTool,
  makeUsage,
  providerError,
  rerankResult,
} from './chat-output.ts';
import { EventStreamDecoder } from './event-stream.ts';

const SUPPORTED = new Set(['top_k', 'thinking']);
/** Converse request fields besides the ones built here; other extras go to additionalModelRequestFields. */
const CONVERSE_FIELDS = new Set([
  'guardrailConfig',
  'performanceConfig',
  'promptVariables',
  'requestMetadata',
  'additionalModelResponseFieldPaths',
  'serviceTier',
]);

type Block = Record<string, unknown>;

const IMAGE_FORMATS: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};
const DOC_FORMATS: Readonly<Record<string, string>> = {
  'application/pdf': 'pdf',
  'text/csv': 'csv',
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/html': 'html',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};

/** A prompt-cache checkpoint after a part marked with `cache_control`. */
const cachePoint = (cache: unknown): Block[] => (cache === undefined ? [] : [{ cachePoint: { type: 'default' } }]);

function mediaBlock(part: MediaPart, path: string): Block {
  const s3 = part.url?.startsWith('s3://') ? { s3Location: { uri: part.url } } : undefined;
  if (part.type === 'image') {
    const mediaType = part.data?.mediaType ?? `image/${(/\.(\w+)$/.exec(part.url ?? '')?.[1] ?? '').toLowerCase()}`;
    const format = IMAGE_FORMATS[mediaType];
    if (!format) throw ValidationError.field(`${path}.image_url.url`, 'Bedrock takes png, jpeg, gif or webp images');
    if (part.data) return { image: { format, source: { bytes: part.data.base64 } } };
    if (s3) return { image: { format, source: s3 } };
    throw ValidationError.field(`${path}.image_url.url`, 'Bedrock does not fetch image URLs: send a base64 data URL or an s3:// URI');
  }
  const format = part.data ? DOC_FORMATS[part.data.mediaType] : (/\.(\w+)$/.exec(part.url ?? '')?.[1] ?? '').toLowerCase();
  if (!format || !Object.values(DOC_FORMATS).includes(format))
    throw ValidationError.field(`${path}.file`, 'Bedrock takes pdf, csv, doc, docx, xls, xlsx, html, txt or md documents');
  // Document names allow letters, digits, whitespace, hyphens, parentheses and square brackets.
  const name =
    (part.filename ?? 'document')
      .replace(/\.[^.]*$/, '')
      .replace(/[^a-zA-Z0-9\s\-()[\]]/g, '-')
      .slice(0, 200) || 'document';
  if (part.data) return { document: { format, name, source: { bytes: part.data.base64 } } };
  if (s3) return { document: { format, name, source: s3 } };
  throw ValidationError.field(`${path}.file`, 'Bedrock does not fetch document URLs: send file_data or an s3:// URI');
}

function userContent(parts: readonly UserPart[], path: string): Block[] {
  return parts.flatMap((p, j) =>
    p.type === 'text'
      ? p.text === ''
        ? []
        : [{ text: p.text }, ...cachePoint(p.cache_control)]
      : [mediaBlock(p, `${path}.content[${j}]`), ...cachePoint(p.cache_control)],
  );
}

const textContent = (parts: readonly TextPart[]): Block[] => parts.flatMap((p) => (p.text === '' ? [] : [{ text: p.text }, ...cachePoint(p.cache_control)]));

/** The Converse body for an OpenAI chat request. */
export function toConverseBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  refuseUnsupported(body, 'bedrock', SUPPORTED);
  const input = readChatInput(body, ctx);
  const system: Block[] = [];
  const messages: { role: 'user' | 'assistant'; content: Block[] }[] = [];
  let toolHistory = false;
  const push = (role: 'user' | 'assistant', content: Block[]) => {
    if (content.length === 0) return;
    const last = messages.at(-1);
    if (last?.role === role) last.content.push(...content);
    else messages.push({ role, content });
  };
  for (const turn of input.turns) {
    if (turn.role === 'system') system.push(...textContent(turn.parts));
    else if (turn.role === 'user') push('user', userContent(turn.parts, turn.path));
    else if (turn.role === 'tool') {
      toolHistory = true;
      push('user', [{ toolResult: { toolUseId: turn.toolCallId, content: [{ text: joinText(turn.parts) }] } }]);
    } else {
      const content: Block[] = [];
      for (const b of turn.blocks) {
        if (b.type === 'thinking')
          content.push({
            reasoningContent: { reasoningText: b.signature === undefined ? { text: b.thinking } : { text: b.thinking, signature: b.signature } },
          });
        else if (b.type === 'redacted_thinking') content.push({ reasoningContent: { redactedContent: b.data } });
      }
      content.push(...textContent(turn.parts));
      turn.toolCalls.forEach((c, j) => {
        toolHistory = true;
        content.push({ toolUse: { toolUseId: c.id, name: c.name, input: parseArguments(c.arguments, `${turn.path}.tool_calls[${j}]`) } });
      });
      push('assistant', content);
    }
  }

  const byTool = jsonViaTool(ctx);
  const rf = input.responseFormat;
  if (rf?.type === 'json_object') system.push({ text: JSON_OBJECT_INSTRUCTION });
  if (rf?.type === 'json_schema' && !byTool) {
    system.push({
      text: `Respond only with a JSON value that conforms to this JSON Schema, without any text before or after it:\n${JSON.stringify(rf.schema)}`,
    });
  }

  const out: Record<string, unknown> = { messages };
  if (system.length) out.system = system;
  const inference: Record<string, unknown> = {};
  if (input.maxTokens !== undefined) inference.maxTokens = input.maxTokens;
  if (input.temperature !== undefined) inference.temperature = input.temperature;
  if (input.topP !== undefined) inference.topP = input.topP;
  if (input.stop.length) inference.stopSequences = input.stop;
  if (Object.keys(inference).length) out.inferenceConfig = inference;

  const tools = input.tools.map((t) => ({
    toolSpec: { name: t.name, ...(t.description ? { description: t.description } : {}), inputSchema: { json: t.parameters } },
  }));
  let toolChoice: Block | undefined;
  if (byTool && rf?.type === 'json_schema') {
    tools.push({ toolSpec: { name: JSON_TOOL, description: rf.description ?? `Returns the answer as ${rf.name}`, inputSchema: { json: rf.schema } } });
    toolChoice = { tool: { name: JSON_TOOL } };
  } else if (input.toolChoice === 'required') toolChoice = { any: {} };
  else if (typeof input.toolChoice === 'object') toolChoice = { tool: { name: input.toolChoice.name } };
  else if (input.toolChoice === 'auto') toolChoice = { auto: {} };
  if (input.toolChoice === 'none' && !byTool) {
    // Converse has no "none": leaving the tools out is the same, unless the history uses them.
    if (toolHistory) throw unsupportedParam('tool_choice', 'bedrock', 'none cannot be combined with tool calls in the conversation');
  } else if (tools.length) {
    out.toolConfig = toolChoice ? { tools, toolChoice } : { tools };
  }

  const additional: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(input.extra)) {
    if (CONVERSE_FIELDS.has(k)) out[k] = v;
    else if (k === 'additionalModelRequestFields' && isRecord(v)) Object.assign(additional, v);
    else additional[k] = v;
  }
  if (input.topK !== undefined) additional.top_k = input.topK;
  if (input.thinking) additional.thinking = { type: 'enabled', budget_tokens: input.thinking.budgetTokens };
  if (Object.keys(additional).length) out.additionalModelRequestFields = additional;
  return out;
}

const STOP: Readonly<Record<string, FinishReason>> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};
const finishOf = (reason: unknown): FinishReason => STOP[String(reason)] ?? 'stop';

export function converseUsage(u: unknown): ChatUsage {
  const n = (k: string) => (isRecord(u) && typeof u[k] === 'number' ? (u[k] as number) : 0);
  const read = n('cacheReadInputTokens');
  const write = n('cacheWriteInputTokens');
  return makeUsage(n('inputTokens') + read + write, n('outputTokens'), { cacheRead: read, cacheWrite: write });
}

export function fromConverse(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const message = isRecord(res.output) && isRecord(res.output.message) ? res.output.message : {};
  const choice = new ChoiceBuilder(jsonViaTool(ctx));
  for (const block of Array.isArray(message.content) ? message.content : []) {
    if (!isRecord(block)) continue;
    if (typeof block.text === 'string') choice.text(block.text);
    else if (isRecord(block.toolUse)) choice.tool(String(block.toolUse.toolUseId), String(block.toolUse.name), JSON.stringify(block.toolUse.input ?? {}));
    else if (isRecord(block.reasoningContent)) {
      const r = block.reasoningContent;
      if (isRecord(r.reasoningText))
        choice.thinking(String(r.reasoningText.text ?? ''), typeof r.reasoningText.signature === 'string' ? r.reasoningText.signature : undefined);
      else if (typeof r.redactedContent === 'string') choice.redacted(r.redactedContent);
    }
  }
  return chatCompletion(ctx, { choices: [choice.build(finishOf(res.stopReason))], usage: converseUsage(res.usage) });
}

const EXCEPTION_STATUS: Readonly<Record<string, number>> = {
  accessDeniedException: 403,
  validationException: 400,
  resourceNotFoundException: 404,
  throttlingException: 429,
  serviceQuotaExceededException: 429,
  modelTimeoutException: 408,
  modelNotReadyException: 429,
  modelErrorException: 424,
  modelStreamErrorException: 424,
  serviceUnavailableException: 503,
  internalServerException: 500,
};

/** ConverseStream event-stream frames -> OpenAI chunks. */
export function converseStream(ctx: ProviderRequestContext): StreamTransformer {
  const writer = new ChunkWriter(ctx, { jsonTool: jsonViaTool(ctx) });
  const decoder = new EventStreamDecoder();
  let failed = false;
  const handle = (type: string, exception: boolean, p: Record<string, unknown>): string => {
    if (exception) {
      const key = type.charAt(0).toLowerCase() + type.slice(1);
      const status = EXCEPTION_STATUS[key] ?? 500;
      return writer.error(providerError(status, typeof p.message === 'string' ? p.message : `Bedrock ${type}`, type));
    }
    const index = typeof p.contentBlockIndex === 'number' ? p.contentBlockIndex : 0;
    switch (type) {
      case 'messageStart':
        return writer.start();
      case 'contentBlockStart': {
        const start = isRecord(p.start) ? p.start : {};
        return isRecord(start.toolUse) ? writer.toolStart(index, String(start.toolUse.toolUseId), String(start.toolUse.name)) : '';
      }
      case 'contentBlockDelta': {
        const d = isRecord(p.delta) ? p.delta : {};
        if (typeof d.text === 'string') return writer.text(d.text);
        if (isRecord(d.toolUse)) return writer.toolArgs(index, String(d.toolUse.input ?? ''));
        if (isRecord(d.reasoningContent)) {
          const r = d.reasoningContent;
          if (typeof r.text === 'string') return writer.thinking({ thinking: r.text }, index);
          if (typeof r.signature === 'string') return writer.thinking({ signature: r.signature }, index);
          if (typeof r.redactedContent === 'string') return writer.thinking({ data: r.redactedContent }, index);
        }
        return '';
      }
      case 'messageStop':
        // The usage (metadata) follows the stop; the finish chunk goes out now.
        return writer.finish(finishOf(p.stopReason));
      case 'metadata':
        if (isRecord(p.usage)) writer.usage(converseUsage(p.usage));
        return '';
      default:
        return '';
    }
  };
  return {
    push(chunk) {
      if (failed) return '';
      try {
        return decoder
          .push(chunk)
          .map((e) => handle(e.type, e.exception, isRecord(e.payload) ? e.payload : {}))
          .join('');
      } catch (err) {
        failed = true;
        return writer.error(providerError(502, `Could not decode the Bedrock event stream: ${(err as Error).message}`, 'stream_decode_error'));
      }
    },
    end: () => writer.end(),
    outcome: () => writer.outcome(),
  };
}

/** Bedrock errors: `{"message"}` with the type in `x-amzn-errortype` (or `__type`). */
export function bedrockError(status: number, text: string, meta: ResponseMeta): OpenAIErrorBody {
  const raw = meta.headers?.['x-amzn-errortype'];
  let code = (Array.isArray(raw) ? raw[0] : raw)?.split(':')[0] ?? null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (isRecord(parsed)) {
      const message = parsed.message ?? parsed.Message;
      if (typeof parsed.__type === 'string') code ??= parsed.__type.split('#').at(-1) ?? null;
      if (typeof message === 'string') return providerError(status, message, code);
    }
  } catch {
    // not JSON
  }
  return providerError(status, errorSnippet(status, text), code);
}

// ---- embeddings (InvokeModel) ----

const isCohereModel = (model: string) => /(^|\.)cohere\.embed/.test(model);
const isTitanEmbed = (model: string) => /(^|\.)amazon\.titan-embed/.test(model);

function embedBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  const inputs = embeddingInputs(body);
  if (isCohereModel(ctx.model)) {
    const out: Record<string, unknown> = { texts: inputs, input_type: typeof body.input_type === 'string' ? body.input_type : 'search_document' };
    if (body.truncate !== undefined) out.truncate = body.truncate;
    if (typeof body.dimensions === 'number') out.output_dimension = body.dimensions;
    return out;
  }
  if (isTitanEmbed(ctx.model)) {
    if (inputs.length !== 1) throw unsupportedParam('input', 'bedrock', 'Titan embedding models take one text per request');
    const out: Record<string, unknown> = { inputText: inputs[0] };
    if (typeof body.dimensions === 'number') out.dimensions = body.dimensions;
    if (typeof body.normalize === 'boolean') out.normalize = body.normalize;
    return out;
  }
  throw ValidationError.field('model', `Bedrock embeddings support Amazon Titan and Cohere embed models, not ${ctx.model}`);
}

function embedResponse(json: unknown, ctx: ProviderRequestContext, meta: ResponseMeta): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const header = meta.headers?.['x-amzn-bedrock-input-token-count'];
  const headerTokens = Number(Array.isArray(header) ? header[0] : header);
  let vectors: number[][] = [];
  let tokens = Number.isFinite(headerTokens) ? headerTokens : 0;
  if (Array.isArray(res.embedding)) {
    vectors = [res.embedding as number[]];
    if (typeof res.inputTextTokenCount === 'number') tokens = res.inputTextTokenCount;
  } else if (Array.isArray(res.embeddings)) vectors = res.embeddings as number[][];
  else if (isRecord(res.embeddings) && Array.isArray(res.embeddings.float)) vectors = res.embeddings.float as number[][];
  return embeddingList(vectors, ctx.model, tokens, ctx.request.encoding_format);
}

// ---- images (InvokeModel): Titan Image Generator / Nova Canvas, and Stability ----

const isStability = (model: string) => /(^|\.)stability\./.test(model);
const STABILITY_ASPECT: Readonly<Record<string, string>> = {
  '1024x1024': '1:1',
  '1792x1024': '16:9',
  '1024x1792': '9:16',
  '1536x1024': '3:2',
  '1024x1536': '2:3',
};

function imageBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  if (typeof body.prompt !== 'string') throw ValidationError.field('prompt', 'is required');
  if (body.response_format === 'url') throw unsupportedParam('response_format', 'bedrock', 'images come back as b64_json only');
  for (const key of ['style', 'background', 'moderation', 'output_compression', 'mask', 'image']) {
    if (body[key] !== undefined && body[key] !== null) throw unsupportedParam(key, 'bedrock');
  }
  const size = typeof body.size === 'string' ? body.size : undefined;
  const n = typeof body.n === 'number' ? body.n : 1;
  if (isStability(ctx.model)) {
    if (n !== 1) throw unsupportedParam('n', 'bedrock', 'Stability models make one image per request');
    const out: Record<string, unknown> = { prompt: body.prompt, output_format: body.output_format === 'jpeg' ? 'jpeg' : 'png' };
    if (size) {
      const ratio = STABILITY_ASPECT[size];
      if (!ratio) throw ValidationError.field('size', `must be one of ${Object.keys(STABILITY_ASPECT).join(', ')} for Stability models`);
      out.aspect_ratio = ratio;
    }
    if (typeof body.negative_prompt === 'string') out.negative_prompt = body.negative_prompt;
    if (typeof body.seed === 'number') out.seed = body.seed;
    return out;
  }
  const config: Record<string, unknown> = { numberOfImages: n, quality: body.quality === 'hd' || body.quality === 'high' ? 'premium' : 'standard' };
  if (size) {
    const m = /^(\d+)x(\d+)$/.exec(size);
    if (!m) throw ValidationError.field('size', 'must be WIDTHxHEIGHT');
    config.width = Number(m[1]);
    config.height = Number(m[2]);
  }
  if (typeof body.seed === 'number') config.seed = body.seed;
  if (typeof body.cfg_scale === 'number') config.cfgScale = body.cfg_scale;
  const params: Record<string, unknown> = { text: body.prompt };
  if (typeof body.negative_prompt === 'string') params.negativeText = body.negative_prompt;
  return { taskType: 'TEXT_IMAGE', textToImageParams: params, imageGenerationConfig: config };
}

function imageResponse(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const images = Array.isArray(res.images) ? res.images.filter((i): i is string => typeof i === 'string') : [];
  return { created: Math.floor(ctx.clock.now() / 1000), data: images.map((b64) => ({ b64_json: b64 })) };
}

// ---- rerank (agent runtime) ----

function rerankModelArn(ctx: ProviderRequestContext): string {
  return ctx.model.startsWith('arn:') ? ctx.model : `arn:aws:bedrock:${awsRegion(ctx)}::foundation-model/${ctx.model}`;
}

function rerankBody(body: Readonly<Record<string, unknown>>, ctx: ProviderRequestContext): Record<string, unknown> {
  const documents = Array.isArray(body.documents) ? body.documents : [];
  if (typeof body.query !== 'string') throw ValidationError.field('query', 'is required');
  const config: Record<string, unknown> = { modelArn: rerankModelArn(ctx) };
  if (isRecord(body.parameters)) config.additionalModelRequestFields = body.parameters;
  return {
    queries: [{ type: 'TEXT', textQuery: { text: body.query } }],
    sources: documents.map((d) => ({
      type: 'INLINE',
      inlineDocumentSource:
        typeof d === 'string' || (isRecord(d) && typeof d.text === 'string' && Object.keys(d).length === 1)
          ? { type: 'TEXT', textDocument: { text: documentText(d) } }
          : { type: 'JSON', jsonDocument: d },
    })),
    rerankingConfiguration: {
      type: 'BEDROCK_RERANKING_MODEL',
      bedrockRerankingConfiguration: { numberOfResults: typeof body.top_n === 'number' ? body.top_n : documents.length, modelConfiguration: config },
    },
  };
}

function rerankResponse(json: unknown, ctx: ProviderRequestContext): Record<string, unknown> {
  const res = isRecord(json) ? json : {};
  const results = (Array.isArray(res.results) ? res.results : []).filter(isRecord).map((r) => ({ index: Number(r.index), score: Number(r.relevanceScore) }));
  const documents = Array.isArray(ctx.request.documents) ? ctx.request.documents : [];
  // Bedrock bills rerank per query in units of up to 100 documents.
  return rerankResult(results, documents, ctx.request, {
    id: ctx.requestId,
    model: ctx.model,
    provider: 'bedrock',
    searchUnits: Math.max(1, Math.ceil(documents.length / 100)),
  });
}

const modelPath = (ctx: ProviderRequestContext, action: string) => `/model/${encodeURIComponent(ctx.model)}/${action}`;

export const bedrock: NativeProvider = defineNative(declared.bedrock, {
  baseUrl: (ctx) => `https://bedrock-runtime.${awsRegion(ctx)}.amazonaws.com`,
  endpoints: {
    chatComplete: (ctx) => ({ method: 'POST', path: modelPath(ctx, ctx.stream ? 'converse-stream' : 'converse') }),
    embed: (ctx) => ({ method: 'POST', path: modelPath(ctx, 'invoke') }),
    imageGenerate: (ctx) => ({ method: 'POST', path: modelPath(ctx, 'invoke') }),
    rerank: (ctx) => ({ method: 'POST', path: '/rerank', baseUrl: `https://bedrock-agent-runtime.${awsRegion(ctx)}.amazonaws.com` }),
  },
  async authenticate(req, ctx) {
    const region = awsRegion(ctx);
    const creds = await awsCredentials(ctx, region);
    if (creds) return signAws(req, creds, region, 'bedrock', ctx.clock.now());
    // Bedrock API keys are bearer tokens.
    if (ctx.apiKey) return { ...req, headers: { ...req.headers, authorization: `Bearer ${ctx.apiKey}` } };
    throw ValidationError.field('aws_access_key_id', 'is required (with aws_secret_access_key), or aws_role_arn, or a Bedrock API key as the bearer token');
  },
  transformRequest(endpoint, body, ctx) {
    if (endpoint === 'embed') return embedBody(body, ctx);
    if (endpoint === 'imageGenerate') return imageBody(body, ctx);
    if (endpoint === 'rerank') return rerankBody(body, ctx);
    return toConverseBody(body, ctx);
  },
  transformResponse(endpoint, json, ctx, meta) {
    if (endpoint === 'embed') return embedResponse(json, ctx, meta);
    if (endpoint === 'imageGenerate') return imageResponse(json, ctx);
    if (endpoint === 'rerank') return rerankResponse(json, ctx);
    return fromConverse(json, ctx);
  },
  transformStream: (_endpoint, ctx) => converseStream(ctx),
  transformError: bedrockError,
});
