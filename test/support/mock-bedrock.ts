/**
 * A mock Amazon Bedrock (runtime and agent runtime) and AWS STS that check SigV4 like AWS does:
 * the signature is recomputed here from the request as received (written from the SigV4 spec,
 * independently of the gateway's signer). Streams are AWS event-stream frames encoded here by hand
 * (prelude, headers, payload, CRC32s).
 */
import { createHash, createHmac } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { startMockServer, type MockServer, type Recorded, type Reply } from './mock-http.ts';
import { TEXT_ANSWER, TOOL_ANSWER } from './native-fixtures.ts';

export const BEDROCK_MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0';
export const KEYS: Record<string, string> = { AKIDEXAMPLE: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', ASIATEMP: 'temp-secret', ASIAROLE: 'role-secret' };

// ---- event-stream encoding ----

function header(name: string, value: string): Buffer {
  const n = Buffer.from(name);
  const v = Buffer.from(value);
  const out = Buffer.alloc(1 + n.length + 1 + 2 + v.length);
  out.writeUInt8(n.length, 0);
  n.copy(out, 1);
  out.writeUInt8(7, 1 + n.length); // string
  out.writeUInt16BE(v.length, 2 + n.length);
  v.copy(out, 4 + n.length);
  return out;
}

export function frame(headers: Record<string, string>, payload: unknown): Buffer {
  const h = Buffer.concat(Object.entries(headers).map(([k, v]) => header(k, v)));
  const body = Buffer.from(JSON.stringify(payload));
  const total = 12 + h.length + body.length + 4;
  const out = Buffer.alloc(total);
  out.writeUInt32BE(total, 0);
  out.writeUInt32BE(h.length, 4);
  out.writeUInt32BE(crc32(out.subarray(0, 8)), 8);
  h.copy(out, 12);
  body.copy(out, 12 + h.length);
  out.writeUInt32BE(crc32(out.subarray(0, total - 4)), total - 4);
  return out;
}

export const event = (type: string, payload: Record<string, unknown>) =>
  frame({ ':event-type': type, ':content-type': 'application/json', ':message-type': 'event' }, { ...payload, p: 'abcdefghijklmnopqrstuvwxyzABCDEF' });

export const exception = (type: string, message: string) =>
  frame({ ':exception-type': type, ':content-type': 'application/json', ':message-type': 'exception' }, { message });

// ---- fixtures (Converse API reference) ----

export function textConverse(): Record<string, unknown> {
  return {
    output: { message: { role: 'assistant', content: [{ text: TEXT_ANSWER.text }] } },
    stopReason: 'end_turn',
    usage: { inputTokens: TEXT_ANSWER.prompt, outputTokens: TEXT_ANSWER.completion, totalTokens: TEXT_ANSWER.prompt + TEXT_ANSWER.completion },
    metrics: { latencyMs: 312 },
  };
}

export function toolConverse(): Record<string, unknown> {
  return {
    output: {
      message: {
        role: 'assistant',
        content: TOOL_ANSWER.calls.map((c, i) => ({
          toolUse: { toolUseId: `tooluse_kZJMlvQmRJ6eAyJE5GIl${i}Q`, name: c.name, input: JSON.parse(c.arguments) as unknown },
        })),
      },
    },
    stopReason: 'tool_use',
    usage: { inputTokens: TOOL_ANSWER.prompt, outputTokens: TOOL_ANSWER.completion, totalTokens: TOOL_ANSWER.prompt + TOOL_ANSWER.completion },
    metrics: { latencyMs: 420 },
  };
}

export function textFrames(): Buffer[] {
  return [
    event('messageStart', { role: 'assistant' }),
    ...TEXT_ANSWER.pieces.map((text) => event('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
    event('contentBlockStop', { contentBlockIndex: 0 }),
    event('messageStop', { stopReason: 'end_turn' }),
    event('metadata', { usage: { inputTokens: TEXT_ANSWER.prompt, outputTokens: TEXT_ANSWER.completion, totalTokens: 28 }, metrics: { latencyMs: 250 } }),
  ];
}

export function toolFrames(): Buffer[] {
  const out = [event('messageStart', { role: 'assistant' })];
  TOOL_ANSWER.calls.forEach((c, i) => {
    out.push(event('contentBlockStart', { contentBlockIndex: i, start: { toolUse: { toolUseId: `tooluse_s${i}`, name: c.name } } }));
    for (const input of c.pieces) out.push(event('contentBlockDelta', { contentBlockIndex: i, delta: { toolUse: { input } } }));
    out.push(event('contentBlockStop', { contentBlockIndex: i }));
  });
  out.push(event('messageStop', { stopReason: 'tool_use' }));
  out.push(
    event('metadata', { usage: { inputTokens: TOOL_ANSWER.prompt, outputTokens: TOOL_ANSWER.completion, totalTokens: 42 }, metrics: { latencyMs: 300 } }),
  );
  return out;
}

// ---- SigV4 verification ----

const sha256 = (v: string | Buffer) => createHash('sha256').update(v).digest('hex');
const hmac = (key: string | Buffer, v: string) => createHmac('sha256', key).update(v).digest();
const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

export interface SigV4Check {
  ok: boolean;
  accessKeyId?: string;
  region?: string;
  service?: string;
  reason?: string;
}

/** Recomputes the request's signature (non-S3 rules: each path segment URI-encoded again). */
export function verifySigV4(req: Recorded, secrets: Record<string, string> = KEYS): SigV4Check {
  const auth = String(req.headers.authorization ?? '');
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return { ok: false, reason: `bad authorization header: ${auth}` };
  const [, akid, date, region, service, signedHeaders, signature] = m as unknown as string[];
  const secret = secrets[akid!];
  if (!secret) return { ok: false, reason: `unknown key ${akid}` };
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  if (!amzDate.startsWith(date!)) return { ok: false, reason: 'x-amz-date does not match the credential scope' };
  const [rawPath, rawQuery = ''] = req.path.split('?') as [string, string?];
  const canonicalUri = rawPath
    .split('/')
    .map((seg) => rfc3986(seg))
    .join('/');
  const canonicalQuery = rawQuery
    .split('&')
    .filter(Boolean)
    .map((kv) => kv.split('=').map((x) => rfc3986(decodeURIComponent(x))) as [string, string?])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v = '']) => `${k}=${v}`)
    .join('&');
  const names = signedHeaders!.split(';');
  const canonicalHeaders = names
    .map(
      (n) =>
        `${n}:${String(req.headers[n] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const payloadHash = sha256(req.body);
  const canonical = [req.method, canonicalUri, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date!), region!), service!), 'aws4_request');
  const expected = createHmac('sha256', key).update(toSign).digest('hex');
  if (expected !== signature) return { ok: false, reason: 'signature mismatch' };
  return { ok: true, accessKeyId: akid!, region: region!, service: service! };
}

const invalidSignature = (reason: string): Reply => ({
  status: 403,
  headers: { 'x-amzn-errortype': 'InvalidSignatureException:http://internal.amazon.com/coral/com.amazon.coral.service/' },
  json: { message: `The request signature we calculated does not match the signature you provided. (${reason})` },
});

export interface MockBedrock extends MockServer {
  checks: SigV4Check[];
}

/** Bedrock runtime, agent runtime (rerank) and STS on one local server. */
export async function startMockBedrock(): Promise<MockBedrock> {
  const checks: SigV4Check[] = [];
  const server = await startMockServer((req) => {
    const bearer = String(req.headers.authorization ?? '').startsWith('Bearer ');
    const check = bearer ? { ok: true } : verifySigV4(req);
    checks.push(check);
    if (!check.ok) return invalidSignature(check.reason ?? '');
    const path = req.path.split('?')[0]!;
    if (path === '/' && req.body.includes('Action=AssumeRole')) {
      if (check.service !== 'sts') return invalidSignature('wrong service');
      return {
        text: `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>ASIAROLE</AccessKeyId><SecretAccessKey>role-secret</SecretAccessKey><SessionToken>role-session-token</SessionToken><Expiration>2026-01-15T13:00:00Z</Expiration></Credentials><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/demo/gantry</Arn><AssumedRoleId>AROA:gantry</AssumedRoleId></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId></ResponseMetadata></AssumeRoleResponse>`,
        headers: { 'content-type': 'text/xml' },
      };
    }
    const body = (req.json ?? {}) as Record<string, any>;
    if (path === '/rerank') {
      const n = body.rerankingConfiguration?.bedrockRerankingConfiguration?.numberOfResults ?? 2;
      return {
        json: {
          results: [
            { index: 1, relevanceScore: 0.91 },
            { index: 0, relevanceScore: 0.12 },
          ].slice(0, n),
        },
      };
    }
    const m = /^\/model\/([^/]+)\/(converse|converse-stream|invoke)$/.exec(path);
    if (!m) return { status: 404, json: { message: `no route ${path}` } };
    const model = decodeURIComponent(m[1]!);
    const wantsTools = Array.isArray(body.toolConfig?.tools) && JSON.stringify(body.messages?.at(-1) ?? '').includes('Rome');
    if (m[2] === 'converse') return { json: wantsTools ? toolConverse() : textConverse() };
    if (m[2] === 'converse-stream')
      return { headers: { 'content-type': 'application/vnd.amazon.eventstream' }, chunks: wantsTools ? toolFrames() : textFrames() };
    if (/titan-embed/.test(model)) return { json: { embedding: [0.1, -0.2, 0.3], inputTextTokenCount: 5 } };
    if (/cohere\.embed/.test(model)) {
      return {
        headers: { 'x-amzn-bedrock-input-token-count': '9' },
        json: { id: 'emb-1', response_type: 'embeddings_floats', embeddings: (body.texts as string[]).map((_, i) => [i, 0.5]), texts: body.texts },
      };
    }
    if (/stability\./.test(model)) return { json: { seeds: [42], finish_reasons: [null], images: ['aW1hZ2Ux'] } };
    if (/titan-image|nova-canvas/.test(model))
      return { json: { images: Array.from({ length: body.imageGenerationConfig?.numberOfImages ?? 1 }, (_, i) => `aW1n${i}`) } };
    return {
      status: 400,
      headers: { 'x-amzn-errortype': 'ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/' },
      json: { message: `unknown model ${model}` },
    };
  });
  return Object.assign(server, { checks });
}
