/** POST /v1/embeddings: OpenAI's request rules. Unknown fields pass through. */
import * as z from 'zod/mini';
import { integerAtLeast, nonEmptyString, parseRequestBody } from './common.ts';

const MAX_INPUTS = 2048;

const INPUT_FORMS = 'must be a string, an array of strings, an array of tokens or an array of token arrays';

const isToken = (v: unknown): boolean => typeof v === 'number' && Number.isInteger(v);

/** A string, strings, tokens or token arrays; nothing empty. One check so each input gets one problem. */
const input = z.unknown().check((payload) => {
  const value = payload.value;
  const issue = (message: string, path: PropertyKey[] = []): void => {
    payload.issues.push({ code: 'custom', message, path, input: value });
  };
  if (value === undefined) return issue('is required');
  if (typeof value === 'string') {
    if (value === '') issue('must not be empty');
    return;
  }
  if (!Array.isArray(value)) return issue(INPUT_FORMS);
  if (value.length === 0) return issue('must not be empty');
  if (value.length > MAX_INPUTS) return issue(`must have at most ${MAX_INPUTS} items`);
  const first: unknown = value[0];
  value.forEach((item: unknown, i) => {
    if (typeof first === 'string') {
      if (typeof item !== 'string') issue('must be a string like the other items', [i]);
      else if (item === '') issue('must not be empty', [i]);
    } else if (isToken(first)) {
      if (!isToken(item)) issue('must be a token (an integer) like the other items', [i]);
    } else if (Array.isArray(item)) {
      if (item.length === 0) issue('must not be empty', [i]);
      else if (!item.every(isToken)) issue('must be an array of tokens (integers)', [i]);
    } else {
      issue(INPUT_FORMS.replace('must be', 'items must be'), [i]);
    }
  });
});

export const embeddingRequestSchema = z.looseObject({
  model: nonEmptyString(),
  input,
  encoding_format: z.optional(z.enum(['float', 'base64'])),
  dimensions: z.optional(integerAtLeast(1)),
  user: z.optional(z.string()),
});

export type EmbeddingRequest = z.output<typeof embeddingRequestSchema>;

export function parseEmbeddingRequest(body: unknown): EmbeddingRequest {
  return parseRequestBody(embeddingRequestSchema, body);
}
