/**
 * Validation of POST /v1/chat/completions bodies (docs/design/spec.md#request-limits).
 * Objects are loose: fields we do not know pass to the provider untouched.
 */
import * as z from 'zod/mini';
import { isRecord } from '../../http/json.ts';
import {
  checkStreamOptions,
  integer,
  integerAtLeast,
  integerBetween,
  logitBias,
  numberBetween,
  parseRequestBody,
  stopSequences as stop,
  streamOptions,
  typeMessage,
} from './common.ts';

const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const FUNCTION_NAME_MESSAGE = 'must be 1 to 64 letters, digits, underscores or dashes';

/** Any JSON object (not an array), e.g. a JSON Schema. */
const jsonObject = z.looseObject({});

// Refinements below must see partly invalid values too, so every problem is reported in one go.
const always = (): boolean => true;

/** Well-known part types get their required members checked; other types pass through. */
const contentPart = z.looseObject({ type: z.string() }).check(
  z.superRefine((part, ctx) => {
    if (part.type === 'text') {
      if (typeof part.text !== 'string') {
        ctx.addIssue({ code: 'custom', path: ['text'], message: part.text === undefined ? 'is required' : 'must be a string' });
      }
    } else if (part.type === 'image_url') {
      const image = part.image_url;
      if (!isRecord(image)) {
        ctx.addIssue({ code: 'custom', path: ['image_url'], message: image === undefined ? 'is required' : 'must be an object' });
      } else if (typeof image.url !== 'string') {
        ctx.addIssue({ code: 'custom', path: ['image_url', 'url'], message: image.url === undefined ? 'is required' : 'must be a string' });
      }
    }
  }),
);

const content = z.union([z.string(), z.array(contentPart)], {
  error: typeMessage('must be a string or an array of content parts'),
});

const toolCall = z.looseObject({
  id: z.string(),
  type: z.literal('function'),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

const functionCall = z.looseObject({ name: z.string(), arguments: z.string() });

const systemMessage = z.looseObject({ role: z.literal('system'), content, name: z.optional(z.string()) });
const developerMessage = z.looseObject({ role: z.literal('developer'), content, name: z.optional(z.string()) });
const userMessage = z.looseObject({ role: z.literal('user'), content, name: z.optional(z.string()) });

const assistantMessage = z
  .looseObject({
    role: z.literal('assistant'),
    content: z.nullish(content),
    name: z.optional(z.string()),
    // null as well: SDKs echo a previous response message back with these set to null.
    tool_calls: z.nullish(z.array(toolCall)),
    function_call: z.nullish(functionCall),
  })
  .check(
    z.superRefine(
      (msg, ctx) => {
        if (msg.content == null && msg.tool_calls == null && msg.function_call == null) {
          ctx.addIssue({ code: 'custom', path: ['content'], message: 'is required unless tool_calls or function_call is present' });
        }
      },
      { when: always },
    ),
  );

const toolMessage = z.looseObject({ role: z.literal('tool'), content, tool_call_id: z.string() });

const functionMessage = z.looseObject({ role: z.literal('function'), name: z.string(), content: z.nullish(content) });

// Option order is the order the "must be one of" message lists the roles in.
const message = z.discriminatedUnion('role', [systemMessage, developerMessage, userMessage, assistantMessage, toolMessage, functionMessage]);

const functionDefinition = z.looseObject({
  name: z.string().check(z.regex(FUNCTION_NAME, { error: FUNCTION_NAME_MESSAGE })),
  description: z.optional(z.string()),
  parameters: z.optional(jsonObject),
  strict: z.optional(z.boolean()),
});

const tool = z.looseObject({ type: z.literal('function'), function: functionDefinition });

const namedToolChoice = z.looseObject({
  type: z.literal('function'),
  function: z.looseObject({ name: z.string() }),
});

const toolChoice = z.union([z.enum(['none', 'auto', 'required']), namedToolChoice], {
  error: typeMessage('must be none, auto, required or an object naming a function'),
});

const functionChoice = z.union([z.enum(['none', 'auto']), z.looseObject({ name: z.string() })], {
  error: typeMessage('must be none, auto or an object naming a function'),
});

const responseFormat = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: z.string(),
      description: z.optional(z.string()),
      schema: z.optional(jsonObject),
      strict: z.nullish(z.boolean()),
    }),
  }),
]);

const thinking = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('enabled'), budget_tokens: integerAtLeast(1) }),
  z.looseObject({ type: z.literal('disabled') }),
]);

const requestShape = z.looseObject({
  model: z.string().check(z.minLength(1, { error: 'must not be empty' })),
  messages: z.array(message).check(z.minLength(1, { error: 'must contain at least 1 message' })),
  frequency_penalty: z.nullish(numberBetween(-2, 2)),
  presence_penalty: z.nullish(numberBetween(-2, 2)),
  logit_bias: z.nullish(logitBias),
  logprobs: z.nullish(z.boolean()),
  top_logprobs: z.nullish(integerBetween(0, 20)),
  // OpenAI rejects 0 for chat (text completions accept it).
  max_tokens: z.nullish(integerAtLeast(1)),
  max_completion_tokens: z.nullish(integerAtLeast(1)),
  n: z.nullish(integerBetween(1, 128)),
  response_format: z.optional(responseFormat),
  seed: z.nullish(integer()),
  stop: z.nullish(stop),
  stream: z.nullish(z.boolean()),
  stream_options: z.nullish(streamOptions),
  // Whether it is allowed at all (strict_openai_compliance) is decided by the router, not here.
  thinking: z.nullish(thinking),
  temperature: z.nullish(numberBetween(0, 2)),
  top_p: z.nullish(numberBetween(0, 1)),
  tools: z.optional(z.array(tool).check(z.maxLength(128, { error: 'must have at most 128 tools' }))),
  tool_choice: z.optional(toolChoice),
  parallel_tool_calls: z.optional(z.boolean()),
  user: z.optional(z.string()),
  functions: z.optional(z.array(functionDefinition).check(z.minLength(1), z.maxLength(128))),
  function_call: z.optional(functionChoice),
});

/** True when `name` names a function among `tools` (tolerating malformed entries). */
function toolsInclude(tools: readonly unknown[], name: string): boolean {
  for (const t of tools) {
    if (isRecord(t) && isRecord(t.function) && t.function.name === name) return true;
  }
  return false;
}

/**
 * Rules spanning fields. They run even when fields failed (to report everything at once), so each
 * acts only on values of the expected type, leaving wrong types to the field's own problem.
 */
export const chatRequestSchema = requestShape.check(
  z.superRefine(
    (req, ctx) => {
      if (typeof req.top_logprobs === 'number' && req.logprobs !== true) {
        ctx.addIssue({ code: 'custom', path: ['top_logprobs'], message: 'requires logprobs to be true' });
      }
      checkStreamOptions(req, ctx);
      const choice: unknown = req.tool_choice;
      const named = isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string' ? choice.function.name : undefined;
      if (named !== undefined || choice === 'auto' || choice === 'required') {
        const tools: unknown = req.tools;
        if (!Array.isArray(tools) || tools.length === 0) {
          ctx.addIssue({ code: 'custom', path: ['tool_choice'], message: 'requires tools to be specified' });
        } else if (named !== undefined && !toolsInclude(tools, named)) {
          ctx.addIssue({
            code: 'custom',
            path: ['tool_choice', 'function', 'name'],
            message: `must name a function in tools (no tool is named ${JSON.stringify(named)})`,
          });
        }
      }
    },
    { when: (payload) => isRecord(payload.value) },
  ),
);

export type ChatCompletionRequest = z.output<typeof chatRequestSchema>;
export type ChatMessage = ChatCompletionRequest['messages'][number];
export type ChatContentPart = z.output<typeof contentPart>;
export type ChatTool = z.output<typeof tool>;

/** Validates a parsed JSON body; throws ValidationError listing every problem, in body order. */
export function parseChatRequest(body: unknown): ChatCompletionRequest {
  return parseRequestBody(chatRequestSchema, body);
}
