/**
 * A mock Gemini API (AI Studio and Vertex AI paths), Claude on Vertex (rawPredict /
 * streamRawPredict) and Google's OAuth token endpoint, which verifies the service account's signed
 * assertion (RS256) with the public key of the test key pair.
 */
import { generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import { textMessage, textStream, toolMessage, toolStream } from './mock-anthropic.ts';
import { startMockServer, type MockServer } from './mock-http.ts';
import { TEXT_ANSWER, TOOL_ANSWER } from './native-fixtures.ts';

export const GEMINI_MODEL = 'gemini-2.5-flash';
export const STUDIO_KEY = 'AIzaSyTestKey';

const usage = (prompt: number, completion: number, extra: Record<string, number> = {}) => ({
  promptTokenCount: prompt,
  candidatesTokenCount: completion,
  totalTokenCount: prompt + completion + (extra.thoughtsTokenCount ?? 0),
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  ...extra,
});

const RATINGS = [
  { category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' },
  { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'NEGLIGIBLE' },
];

export function textResponse(): Record<string, unknown> {
  return {
    candidates: [{ content: { parts: [{ text: TEXT_ANSWER.text }], role: 'model' }, finishReason: 'STOP', index: 0, safetyRatings: RATINGS }],
    usageMetadata: usage(TEXT_ANSWER.prompt, TEXT_ANSWER.completion),
    modelVersion: GEMINI_MODEL,
    responseId: 'mT9uaPuHKr6f1dkP3dCm8Qg',
  };
}

export function toolResponse(): Record<string, unknown> {
  return {
    candidates: [
      {
        content: { parts: TOOL_ANSWER.calls.map((c) => ({ functionCall: { name: c.name, args: JSON.parse(c.arguments) as unknown } })), role: 'model' },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: usage(TOOL_ANSWER.prompt, TOOL_ANSWER.completion),
    modelVersion: GEMINI_MODEL,
    responseId: 'tool-response-1',
  };
}

export const blockedPrompt = () => ({
  promptFeedback: { blockReason: 'SAFETY', safetyRatings: RATINGS },
  usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 },
  modelVersion: GEMINI_MODEL,
});
export const blockedCandidate = () => ({
  candidates: [{ finishReason: 'SAFETY', index: 0, safetyRatings: RATINGS }],
  usageMetadata: usage(8, 0),
  modelVersion: GEMINI_MODEL,
});

/** Gemini's SSE uses CRLF line ends. */
const sse = (data: unknown) => `data: ${JSON.stringify(data)}\r\n\r\n`;

export function textChunks(): string[] {
  return TEXT_ANSWER.pieces.map((text, i, all) => {
    const last = i === all.length - 1;
    return sse({
      candidates: [{ content: { parts: [{ text }], role: 'model' }, index: 0, ...(last ? { finishReason: 'STOP' } : {}) }],
      usageMetadata: last ? usage(TEXT_ANSWER.prompt, TEXT_ANSWER.completion) : { promptTokenCount: TEXT_ANSWER.prompt, totalTokenCount: TEXT_ANSWER.prompt },
      modelVersion: GEMINI_MODEL,
      responseId: 'stream-1',
    });
  });
}

export function toolChunks(): string[] {
  return [sse({ ...toolResponse(), responseId: 'stream-tool' })];
}

export const googleErrorReply = (code: number, status: string, message: string) => ({ status: code, json: { error: { code, message, status } } });

export interface TestServiceAccount {
  json: Record<string, string>;
  publicKey: KeyObject;
}

/** A service account key made for the test (RSA 2048, PKCS#8 PEM). */
export function testServiceAccount(): TestServiceAccount {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    publicKey,
    json: {
      type: 'service_account',
      project_id: 'gantry-test-project',
      private_key_id: 'a1b2c3d4e5',
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: 'gantry@gantry-test-project.iam.gserviceaccount.com',
      client_id: '100000000000000000001',
      token_uri: 'https://oauth2.googleapis.com/token',
    },
  };
}

export interface MockGoogle extends MockServer {
  minted: { claims: Record<string, unknown>; header: Record<string, unknown> }[];
  tokenUrl: string;
}

export async function startMockGoogle(account: TestServiceAccount): Promise<MockGoogle> {
  const minted: MockGoogle['minted'] = [];
  const issued = new Set<string>(['ya29.user-supplied']);
  let tokenUrl = '';
  const server = await startMockServer((req) => {
    const path = req.path.split('?')[0]!;
    if (path === '/token') {
      const form = new URLSearchParams(req.body);
      const [h, c, s] = (form.get('assertion') ?? '').split('.');
      const valid =
        form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:jwt-bearer' &&
        h &&
        c &&
        s &&
        verify('RSA-SHA256', Buffer.from(`${h}.${c}`), account.publicKey, Buffer.from(s, 'base64url'));
      if (!valid) return { status: 400, json: { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' } };
      const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as Record<string, unknown>;
      if (claims.aud !== tokenUrl) return { status: 400, json: { error: 'invalid_grant', error_description: 'Invalid JWT: audience' } };
      minted.push({ claims, header: JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown> });
      const token = `ya29.minted-${minted.length}`;
      issued.add(token);
      return { json: { access_token: token, expires_in: 3599, token_type: 'Bearer' } };
    }
    const vertex = path.startsWith('/v1/projects/');
    if (vertex) {
      const token = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
      if (!issued.has(token)) return googleErrorReply(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.');
    } else if (req.headers['x-goog-api-key'] !== STUDIO_KEY) {
      return googleErrorReply(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.');
    }
    const body = (req.json ?? {}) as Record<string, any>;
    const wantsTools = JSON.stringify(body.contents?.at(-1) ?? body.messages?.at(-1) ?? '').includes('Rome') && (body.tools ?? []).length > 0;
    if (path.endsWith(':rawPredict')) return { json: wantsTools ? toolMessage() : textMessage() };
    if (path.endsWith(':streamRawPredict')) return { chunks: wantsTools ? toolStream() : textStream() };
    if (path.endsWith(':generateContent')) return { json: wantsTools ? toolResponse() : textResponse() };
    if (path.endsWith(':streamGenerateContent')) return { chunks: wantsTools ? toolChunks() : textChunks() };
    if (path.endsWith(':batchEmbedContents')) return { json: { embeddings: (body.requests as unknown[]).map((_, i) => ({ values: [i, 0.25] })) } };
    if (path.endsWith(':predict')) {
      return {
        json: {
          predictions: (body.instances as unknown[]).map((_, i) => ({ embeddings: { values: [i, 0.75], statistics: { token_count: 3, truncated: false } } })),
        },
      };
    }
    return googleErrorReply(404, 'NOT_FOUND', `no route ${path}`);
  });
  tokenUrl = `${server.url}/token`;
  return Object.assign(server, { minted, tokenUrl });
}
