/** The gateway's routes: OpenAI-compatible endpoints with errors in OpenAI's shape. */
import { randomUUID } from 'node:crypto';
import type { CoreDeps } from '../deps.ts';
import type { RouteModule } from '../http/app.ts';
import { asGantryError, toOpenAIBody, ValidationError } from '../http/errors.ts';
import { jsonResponse, tryParseJson } from '../http/json.ts';
import { requireGatewayAccess } from './access.ts';
import { relay } from './respond.ts';
import { parseRequestTimeout, resolveTarget } from './target.ts';
import { parseChatRequest } from './validate/chat.ts';

export async function chatCompletions(req: Request, deps: CoreDeps): Promise<Response> {
  const traceId = req.headers.get('x-gw-trace-id') || randomUUID();
  const responseHeaders: Record<string, string> = { 'x-gw-trace-id': traceId };
  try {
    const principal = await deps.keyAuth.authenticate(req.headers.get('x-gw-api-key'));
    requireGatewayAccess(principal);

    const text = await req.text();
    const json = tryParseJson(text);
    if (!json.ok) {
      throw new ValidationError([{ path: '', message: 'The request body is not valid JSON' }], { param: null, openaiCode: 'invalid_json' });
    }
    parseChatRequest(json.value);

    const target = resolveTarget(req.headers, 'chatComplete', deps.trustedHosts);
    responseHeaders['x-gw-provider'] = target.provider.id;
    const timeoutMs = parseRequestTimeout(req.headers);

    // The validated body is sent as the client wrote it: unknown fields reach the provider untouched.
    const upstream = await deps.upstream.send({
      url: target.url,
      method: 'POST',
      headers: target.headers,
      body: text,
      timeoutMs,
      signal: req.signal,
    });
    return await relay(upstream, responseHeaders);
  } catch (err) {
    const e = asGantryError(err);
    if (e.status >= 500 && e.status !== 502 && e.status !== 503) deps.logger.error('gateway request failed', { traceId, error: err });
    return jsonResponse(toOpenAIBody(e), e.status, { ...e.headers, ...responseHeaders });
  }
}

export const gatewayModule: RouteModule = (app, deps) => {
  app.post('/v1/chat/completions', (c) => chatCompletions(c.req.raw, deps));
};
