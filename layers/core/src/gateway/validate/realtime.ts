/**
 * POST /v1/realtime/client_secrets and the older POST /v1/realtime/sessions: OpenAI's rules for
 * minting a short-lived client secret. The model is required, so that the workspace's model
 * allow-list (managed providers) and the log see it: `session.model` for client secrets, `model`
 * for sessions. Unknown fields pass through.
 */
import * as z from 'zod/mini';
import { integerBetween, nonEmptyString, parseRequestBody } from './common.ts';

const sessionFields = {
  model: nonEmptyString(),
  instructions: z.optional(z.string()),
};

export const clientSecretRequestSchema = z.looseObject({
  expires_after: z.optional(z.looseObject({ anchor: z.optional(z.literal('created_at')), seconds: z.optional(integerBetween(10, 7200)) })),
  session: z.looseObject({ type: z.optional(z.enum(['realtime', 'transcription'])), ...sessionFields }),
});

export const realtimeSessionRequestSchema = z.looseObject(sessionFields);

export function parseClientSecretRequest(body: unknown): void {
  parseRequestBody(clientSecretRequestSchema, body);
}

export function parseRealtimeSessionRequest(body: unknown): void {
  parseRequestBody(realtimeSessionRequestSchema, body);
}

/** Where a client secret request names its model. */
export const clientSecretModel = (body: Readonly<Record<string, unknown>>): unknown => (body.session as Record<string, unknown> | undefined)?.model;
