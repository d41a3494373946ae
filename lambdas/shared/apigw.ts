/** API Gateway REST proxy events to Web Requests, and Web Responses back. Wiring only. */
import type { APIGatewayProxyEvent, APIGatewayProxyResult } from 'aws-lambda';
import { requestWithBody } from '../../layers/core/src/http/bodies.ts';

export function eventToRequest(event: APIGatewayProxyEvent): Request {
  const headers = new Headers();
  if (event.multiValueHeaders) {
    for (const [k, vs] of Object.entries(event.multiValueHeaders)) for (const v of vs ?? []) headers.append(k, v);
  } else {
    for (const [k, v] of Object.entries(event.headers ?? {})) if (v !== undefined) headers.set(k, v);
  }
  const query = new URLSearchParams();
  if (event.multiValueQueryStringParameters) {
    for (const [k, vs] of Object.entries(event.multiValueQueryStringParameters)) for (const v of vs ?? []) query.append(k, v);
  } else {
    for (const [k, v] of Object.entries(event.queryStringParameters ?? {})) if (v !== undefined) query.set(k, v);
  }
  const host = headers.get('host') ?? 'lambda.local';
  const qs = query.toString();
  const url = `https://${host}${event.path}${qs ? `?${qs}` : ''}`;
  const method = event.httpMethod.toUpperCase();
  const hasBody = event.body !== null && event.body !== undefined && method !== 'GET' && method !== 'HEAD';
  // binaryMediaTypes '*/*': bodies arrive base64-encoded; multipart and binary bytes stay exact.
  const body = hasBody ? Buffer.from(event.body as string, event.isBase64Encoded ? 'base64' : 'utf8') : undefined;
  return requestWithBody(url, { method, headers }, body);
}

/** Single-valued headers and cookies, as the streaming prelude wants them. */
export function splitHeaders(res: Response): { headers: Record<string, string>; cookies: string[] } {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value;
  });
  return { headers, cookies: res.headers.getSetCookie() };
}

const TEXTUAL = /^(application\/(json|.*\+json|x-ndjson|javascript|xml)|text\/)/i;

/** A buffered proxy result (admin function). Binary bodies are base64-encoded. */
export async function responseToResult(res: Response): Promise<APIGatewayProxyResult> {
  const { headers, cookies } = splitHeaders(res);
  const buf = Buffer.from(await res.arrayBuffer());
  // Without a content type the body could be anything: base64 keeps it intact.
  const textual = buf.length === 0 || TEXTUAL.test(res.headers.get('content-type') ?? '');
  return {
    statusCode: res.status,
    headers,
    ...(cookies.length ? { multiValueHeaders: { 'set-cookie': cookies } } : {}),
    body: textual ? buf.toString('utf8') : buf.toString('base64'),
    isBase64Encoded: !textual,
  };
}
