/** API Gateway REST proxy events to Web Requests and Web Responses to proxy results. No network. */
import { describe, expect, it } from 'vitest';
import { eventToRequest, responseToResult, splitHeaders } from '../../../lambdas/shared/apigw.ts';
import { restEvent } from '../../support/apigw-event.ts';

describe('eventToRequest', () => {
  it('builds the URL from the host header, path and query', () => {
    const req = eventToRequest(
      restEvent({
        path: '/v1/api-keys',
        queryStringParameters: { page_size: '5' },
        multiValueQueryStringParameters: { page_size: ['5'] },
      }),
    );
    expect(req.url).toBe('https://abc123.execute-api.eu-west-1.amazonaws.com/v1/api-keys?page_size=5');
    expect(req.method).toBe('GET');
  });

  it('falls back to a placeholder host when there is none', () => {
    const req = eventToRequest(restEvent({ headers: {}, multiValueHeaders: {} }));
    expect(new URL(req.url).host).toBe('lambda.local');
  });

  it('keeps every value of a repeated header', () => {
    const req = eventToRequest(
      restEvent({
        headers: { Accept: 'text/plain', 'X-Gw-Api-Key': 'gw_k' },
        multiValueHeaders: { Accept: ['application/json', 'text/plain'], 'X-Gw-Api-Key': ['gw_k'] },
      }),
    );
    expect(req.headers.get('accept')).toBe('application/json, text/plain');
    expect(req.headers.get('x-gw-api-key')).toBe('gw_k');
  });

  it('uses single-value headers when there are no multi-value ones', () => {
    const req = eventToRequest(restEvent({ headers: { 'x-gw-api-key': 'gw_single', host: 'h.example' }, multiValueHeaders: undefined as never }));
    expect(req.headers.get('x-gw-api-key')).toBe('gw_single');
    expect(new URL(req.url).host).toBe('h.example');
  });

  it('keeps every value of a repeated query parameter and encodes special characters', () => {
    const req = eventToRequest(
      restEvent({
        queryStringParameters: { tag: 'b', q: 'a b&c=d' },
        multiValueQueryStringParameters: { tag: ['a', 'b'], q: ['a b&c=d'] },
      }),
    );
    const url = new URL(req.url);
    expect(url.searchParams.getAll('tag')).toEqual(['a', 'b']);
    expect(url.searchParams.get('q')).toBe('a b&c=d');
  });

  it('uses single-value query parameters when there are no multi-value ones', () => {
    const req = eventToRequest(restEvent({ queryStringParameters: { workspace_id: 'default' }, multiValueQueryStringParameters: null }));
    expect(new URL(req.url).searchParams.get('workspace_id')).toBe('default');
  });

  it('passes a text body as it is', async () => {
    const body = JSON.stringify({ name: 'k', scopes: ['completions.write'] });
    const req = eventToRequest(restEvent({ httpMethod: 'POST', path: '/v1/api-keys/workspace/service', body }));
    expect(req.method).toBe('POST');
    expect(await req.text()).toBe(body);
  });

  it('decodes a base64 body to its exact bytes', async () => {
    const bytes = Uint8Array.from([0, 1, 2, 250, 255, 10, 13]);
    const req = eventToRequest(restEvent({ httpMethod: 'PUT', body: Buffer.from(bytes).toString('base64'), isBase64Encoded: true }));
    expect(new Uint8Array(await req.arrayBuffer())).toEqual(bytes);
  });

  it('decodes a base64 UTF-8 JSON body', async () => {
    const text = '{"name": "clé ✓"}';
    const req = eventToRequest(restEvent({ httpMethod: 'POST', body: Buffer.from(text).toString('base64'), isBase64Encoded: true }));
    expect(await req.json()).toEqual({ name: 'clé ✓' });
  });

  it.each(['GET', 'HEAD', 'get'])('drops a body sent with %s instead of failing', async (method) => {
    const req = eventToRequest(restEvent({ httpMethod: method, body: '{"ignored": true}' }));
    expect(req.method).toBe(method.toUpperCase());
    expect(req.body).toBeNull();
  });

  it('sends no body for a POST without one', async () => {
    const req = eventToRequest(restEvent({ httpMethod: 'POST', body: null }));
    expect(await req.text()).toBe('');
  });
});

describe('splitHeaders', () => {
  it('separates cookies from the other headers', () => {
    const headers = new Headers({ 'content-type': 'application/json', 'x-gw-trace-id': 't' });
    headers.append('set-cookie', 'a=1; Path=/');
    headers.append('set-cookie', 'b=2; HttpOnly');
    expect(splitHeaders(new Response(null, { headers }))).toEqual({
      headers: { 'content-type': 'application/json', 'x-gw-trace-id': 't' },
      cookies: ['a=1; Path=/', 'b=2; HttpOnly'],
    });
  });
});

describe('responseToResult', () => {
  it('returns a JSON body as text with its status and headers', async () => {
    const res = new Response(JSON.stringify({ object: 'list', total: 0, data: [] }), {
      status: 201,
      headers: { 'content-type': 'application/json', 'x-gw-trace-id': 'abc' },
    });
    const result = await responseToResult(res);
    expect(result).toEqual({
      statusCode: 201,
      headers: { 'content-type': 'application/json', 'x-gw-trace-id': 'abc' },
      body: '{"object":"list","total":0,"data":[]}',
      isBase64Encoded: false,
    });
  });

  it.each(['text/plain; charset=utf-8', 'application/problem+json', 'application/x-ndjson', 'text/event-stream'])('keeps %s as text', async (type) => {
    const result = await responseToResult(new Response('héllo', { headers: { 'content-type': type } }));
    expect(result.body).toBe('héllo');
    expect(result.isBase64Encoded).toBe(false);
  });

  it('base64-encodes a binary body, byte for byte', async () => {
    const bytes = Uint8Array.from([137, 80, 78, 71, 0, 255, 128]);
    const result = await responseToResult(new Response(bytes, { headers: { 'content-type': 'image/png' } }));
    expect(result.isBase64Encoded).toBe(true);
    expect(new Uint8Array(Buffer.from(result.body, 'base64'))).toEqual(bytes);
    expect(result.headers).toEqual({ 'content-type': 'image/png' });
  });

  it('puts cookies in multiValueHeaders, each one whole, and not in headers', async () => {
    const headers = new Headers({ 'content-type': 'application/json' });
    headers.append('set-cookie', 'session=abc; Expires=Wed, 21 Oct 2026 07:28:00 GMT');
    headers.append('set-cookie', 'theme=dark');
    const result = await responseToResult(new Response('{}', { headers }));
    expect(result.multiValueHeaders).toEqual({ 'set-cookie': ['session=abc; Expires=Wed, 21 Oct 2026 07:28:00 GMT', 'theme=dark'] });
    expect(result.headers).not.toHaveProperty('set-cookie');
  });

  it('has no multiValueHeaders without cookies', async () => {
    const result = await responseToResult(new Response('{}', { headers: { 'content-type': 'application/json' } }));
    expect(result).not.toHaveProperty('multiValueHeaders');
  });

  it('returns an empty body for a response without one', async () => {
    const result = await responseToResult(new Response(null, { status: 204 }));
    expect(result.statusCode).toBe(204);
    expect(result.body).toBe('');
  });
});
