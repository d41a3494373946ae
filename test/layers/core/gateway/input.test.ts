/**
 * The readInput phase: the body read as the endpoint takes it, validated (400 naming the field),
 * completed with the endpoint's defaults, a dialect's body translated first, path parameters
 * checked, and the request noted in the record with its metadata.
 */
import { describe, expect, it } from 'vitest';
import { openRecord, type Flight } from '../../../../layers/core/src/gateway/flight.ts';
import { readInput, type RouteMatch } from '../../../../layers/core/src/gateway/input.ts';
import { anthropicDialect } from '../../../../layers/core/src/gateway/messages.ts';
import type { Dialect } from '../../../../layers/core/src/gateway/dialect.ts';
import type { EndpointSpec } from '../../../../layers/core/src/gateway/endpoint.ts';
import { DEFAULT_MODERATION_MODEL } from '../../../../layers/core/src/gateway/validate/moderations.ts';
import { GantryError, ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { workspacePrincipal } from '../../../support/identity.ts';
import { CHAT, chatBody, gatewayRequest, specOf, unitDeps } from '../../../support/unit-deps.ts';

function flight(spec: EndpointSpec, req: Request, dialect?: Dialect): Flight {
  return openRecord(spec, req, unitDeps(), dialect);
}

async function read(spec: EndpointSpec, req: Request, route: RouteMatch = {}, dialect?: Dialect) {
  const f = flight(spec, req, dialect);
  return { f, input: await readInput(f, req, route) };
}

async function refused(spec: EndpointSpec, req: Request, route: RouteMatch = {}): Promise<GantryError> {
  const err = await readInput(flight(spec, req), req, route).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GantryError);
  return err as GantryError;
}

const post = (path: string, body: unknown, headers: Record<string, string> = {}) => gatewayRequest(path, { body, headers });

describe('a JSON body', () => {
  it("is read, noted in the record (model, stream) and sent as the client's text", async () => {
    const text = JSON.stringify(chatBody({ stream: true }), null, 1);
    const { f, input } = await read(CHAT, post('/chat/completions', text));
    expect(input.body).toEqual({ kind: 'json', text, value: chatBody({ stream: true }) });
    expect(input.fields).toEqual(chatBody({ stream: true }));
    expect(f.record).toMatchObject({ model: 'gpt-4o-mini', stream: true, request: chatBody({ stream: true }) });
  });

  it('is refused with 400 naming the field the endpoint rejects', async () => {
    const err = await refused(CHAT, post('/chat/completions', { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }], temperature: 7 }));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ status: 400, param: 'temperature' });
    const missing = await refused(CHAT, post('/chat/completions', { model: 'gpt-4o-mini' }));
    expect(missing).toMatchObject({ status: 400, param: 'messages' });
  });

  it('is refused with 400 when it is not JSON, or not an object', async () => {
    expect(await refused(CHAT, post('/chat/completions', '{"model": '))).toMatchObject({ status: 400, openaiCode: 'invalid_json' });
    expect(await refused(CHAT, post('/chat/completions', '[1, 2]'))).toMatchObject({ status: 400, message: 'request body must be a JSON object' });
  });

  it('is refused with 413 past the endpoint limit, before it is parsed', async () => {
    const small: EndpointSpec = { ...CHAT, maxBodyBytes: 64 };
    expect(await refused(small, post('/chat/completions', chatBody({ user: 'x'.repeat(100) })))).toMatchObject({ status: 413 });
  });

  it("gets the endpoint's defaults for the fields the client left out, and keeps the client's own", async () => {
    const moderations = specOf('POST', '/moderations');
    const filled = await read(moderations, post('/moderations', { input: 'hello' }));
    expect(filled.input.body).toMatchObject({ kind: 'json', value: { input: 'hello', model: DEFAULT_MODERATION_MODEL } });
    expect(JSON.parse((filled.input.body as { text: string }).text)).toEqual({ input: 'hello', model: DEFAULT_MODERATION_MODEL });
    expect(filled.f.record.model).toBe(DEFAULT_MODERATION_MODEL);
    const own = await read(moderations, post('/moderations', { input: 'hello', model: 'omni-moderation-2024-09-26' }));
    expect(own.input.body).toMatchObject({ value: { model: 'omni-moderation-2024-09-26' } });
  });
});

describe('metadata', () => {
  it("is the key's default metadata with the request's x-gw-metadata winning", async () => {
    const req = post('/chat/completions', chatBody(), { 'x-gw-metadata': '{"team": "blue", "user": "u-7"}' });
    const f = flight(CHAT, req);
    f.record.principal = workspacePrincipal({ defaults: { metadata: { team: 'red', env: 'prod' } } });
    await readInput(f, req, {});
    expect(f.record.metadata).toEqual({ team: 'blue', env: 'prod', user: 'u-7' });
  });

  it('is refused with 400 naming x-gw-metadata when it is not a JSON object', async () => {
    for (const bad of ['not json', '[1]', 'null']) {
      const err = await refused(CHAT, post('/chat/completions', chatBody(), { 'x-gw-metadata': bad }));
      expect(err).toMatchObject({ status: 400, param: 'x-gw-metadata' });
    }
  });
});

describe('path parameters', () => {
  const retrieve = specOf('GET', '/files/{file_id}');

  it('are passed on checked, and refused with 400 naming the parameter when unsafe', async () => {
    const ok = await read(retrieve, gatewayRequest('/files/file-1'), { params: { file_id: 'file-1' } });
    expect(ok.input.params).toEqual({ file_id: 'file-1' });
    expect(ok.input.body).toEqual({ kind: 'none' });
    for (const bad of ['..', 'a/b', '']) {
      expect(await refused(retrieve, gatewayRequest('/files/x'), { params: { file_id: bad } })).toMatchObject({ status: 400, param: 'file_id' });
    }
  });
});

describe('a multipart form', () => {
  const transcriptions = specOf('POST', '/audio/transcriptions');
  const form = (fields: Record<string, string>, file = true): Request => {
    const data = new FormData();
    for (const [name, value] of Object.entries(fields)) data.set(name, value);
    if (file) data.set('file', new Blob([new Uint8Array(16)], { type: 'audio/mpeg' }), 'a.mp3');
    return new Request('http://gantry.test/v1/audio/transcriptions', { method: 'POST', body: data, headers: { 'x-gw-api-key': 'k' } });
  };

  it('is sent byte for byte with its fields for routing, and refused naming a missing field', async () => {
    const { f, input } = await read(transcriptions, form({ model: 'whisper-1' }));
    expect(input.body).toMatchObject({ kind: 'raw', contentType: expect.stringContaining('multipart/form-data; boundary=') });
    expect(input.fields).toMatchObject({ model: 'whisper-1' });
    expect(f.record.model).toBe('whisper-1');
    expect(await refused(transcriptions, form({ model: 'whisper-1' }, false))).toMatchObject({ status: 400, param: 'file' });
  });
});

describe('a dialect', () => {
  it('is translated into the OpenAI request, which is then validated and noted', async () => {
    const messages = specOf('POST', '/messages');
    const anthropic = { model: 'claude-sonnet-4', max_tokens: 64, system: 'Be brief', messages: [{ role: 'user', content: 'Hi' }] };
    const { f, input } = await read(messages, post('/messages', anthropic), {}, anthropicDialect('messages'));
    expect(input.dialect).toBeDefined();
    expect(input.body).toMatchObject({
      kind: 'json',
      value: {
        model: 'claude-sonnet-4',
        messages: [
          { role: 'system', content: 'Be brief' },
          { role: 'user', content: 'Hi' },
        ],
      },
    });
    expect(f.record.model).toBe('claude-sonnet-4');
  });
});
