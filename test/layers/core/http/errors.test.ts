/** The error hierarchy and its two renderings (admin and OpenAI shapes). No network. */
import { describe, expect, it } from 'vitest';
import {
  asGantryError,
  clipQuoted,
  AuthenticationError,
  ConflictError,
  ForbiddenError,
  GantryError,
  InternalError,
  NotFoundError,
  RateLimitedError,
  RequestTimeoutError,
  RouteNotFoundError,
  toAdminBody,
  toOpenAIBody,
  UpstreamError,
  UsageExhaustedError,
  ValidationError,
} from '../../../../layers/core/src/http/errors.ts';
import { toResponse } from '../../../../layers/core/src/http/error-response.ts';

describe('error classes', () => {
  it.each([
    ['ValidationError', () => ValidationError.field('name', 'is required'), 400, 'AB01', 'invalid_request_error', 'invalid_value'],
    ['AuthenticationError', () => new AuthenticationError(), 401, 'AB05', 'authentication_error', 'invalid_api_key'],
    ['ForbiddenError', () => new ForbiddenError('no'), 403, 'AB03', 'permission_error', 'forbidden'],
    ['NotFoundError', () => new NotFoundError('gone'), 404, 'AB08', 'not_found_error', 'not_found'],
    ['RouteNotFoundError', () => new RouteNotFoundError('GET', '/v1/nope'), 404, 'AB02', 'not_found_error', 'route_not_found'],
    ['ConflictError', () => new ConflictError('taken'), 409, 'AB07', 'conflict_error', 'conflict'],
    ['RateLimitedError', () => new RateLimitedError('slow down'), 429, 'AB06', 'rate_limit_error', 'rate_limit_exceeded'],
    ['UsageExhaustedError', () => new UsageExhaustedError('spent'), 402, 'AB09', 'budget_exhausted', 'budget_exhausted'],
    ['RequestTimeoutError', () => new RequestTimeoutError(250), 408, 'AB04', 'timeout_error', 'request_timeout'],
    ['UpstreamError', () => new UpstreamError(503, 'down'), 503, 'AB04', 'api_error', 'upstream_error'],
    ['InternalError', () => new InternalError(), 500, 'AB04', 'api_error', 'internal_error'],
  ] as const)('%s carries its status, admin code and OpenAI type and code', (name, make, status, code, type, openaiCode) => {
    const err = make();
    expect(err).toBeInstanceOf(GantryError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe(name);
    expect(err.status).toBe(status);
    expect(err.code).toBe(code);
    expect(err.type).toBe(type);
    expect(err.openaiCode).toBe(openaiCode);
  });

  it('default messages say what went wrong', () => {
    expect(new AuthenticationError().message).toBe('Invalid API key');
    expect(new InternalError().message).toBe('Internal server error');
    expect(new RouteNotFoundError('DELETE', '/v1/x').message).toBe('No route for DELETE /v1/x');
    expect(new RequestTimeoutError(1500).message).toContain('1500 ms');
  });

  it('UpstreamError keeps the status it is given', () => {
    expect(new UpstreamError(502, 'x').status).toBe(502);
    expect(new UpstreamError(504, 'x').status).toBe(504);
  });

  it('keeps options: param, headers, cause, and an overriding OpenAI code', () => {
    const cause = new Error('root');
    const err = new RateLimitedError('slow down', { param: 'model', headers: { 'retry-after': '7' }, cause, openaiCode: 'tokens' });
    expect(err.param).toBe('model');
    expect(err.headers).toEqual({ 'retry-after': '7' });
    expect(err.cause).toBe(cause);
    expect(err.openaiCode).toBe('tokens');
    expect(new ForbiddenError('x').headers).toEqual({});
    expect(new ForbiddenError('x').param).toBeNull();
    expect(new ForbiddenError('x').problems).toEqual([]);
    expect('cause' in new ForbiddenError('x')).toBe(false);
  });
});

describe('ValidationError', () => {
  it('lists every problem in its message and names the first as param', () => {
    const err = new ValidationError([
      { path: 'name', message: 'is required' },
      { path: 'scopes[1]', message: 'is not a known scope' },
    ]);
    expect(err.message).toBe('name: is required; scopes[1]: is not a known scope');
    expect(err.param).toBe('name');
    expect(err.problems).toHaveLength(2);
  });

  it('a problem without a path is listed by its message alone, and names no param', () => {
    const err = new ValidationError([{ path: '', message: 'request body must be a JSON object' }]);
    expect(err.message).toBe('request body must be a JSON object');
    expect(err.param).toBeNull();
  });

  it('an explicit null param names no field even when a problem has a path', () => {
    const err = new ValidationError([{ path: 'body', message: 'is not JSON' }], { param: null, openaiCode: 'invalid_json' });
    expect(err.param).toBeNull();
    expect(err.openaiCode).toBe('invalid_json');
    expect(new ValidationError([{ path: 'body', message: 'x' }], { param: 'other' }).param).toBe('other');
  });

  it('without problems it still says the request is invalid', () => {
    const err = new ValidationError([]);
    expect(err.message).toBe('Invalid request');
    expect(err.param).toBeNull();
  });

  it('field() builds a one-problem error', () => {
    const err = ValidationError.field('x-gw-provider', 'is required');
    expect(err.problems).toEqual([{ path: 'x-gw-provider', message: 'is required' }]);
    expect(err.message).toBe('x-gw-provider: is required');
    expect(err.param).toBe('x-gw-provider');
  });

  it('keeps headers and cause', () => {
    const cause = new SyntaxError('bad');
    const err = new ValidationError([{ path: 'a', message: 'b' }], { headers: { 'x-a': '1' }, cause });
    expect(err.headers).toEqual({ 'x-a': '1' });
    expect(err.cause).toBe(cause);
  });
});

describe('rendering', () => {
  it('toAdminBody: object, errorCode, message and the field problems', () => {
    const err = new ValidationError([
      { path: 'name', message: 'is required' },
      { path: 'scopes', message: 'must name at least one scope' },
    ]);
    expect(toAdminBody(err)).toEqual({
      object: 'error',
      errorCode: 'AB01',
      message: 'name: is required; scopes: must name at least one scope',
      errors: [
        { path: 'name', message: 'is required' },
        { path: 'scopes', message: 'must name at least one scope' },
      ],
    });
    expect(toAdminBody(new NotFoundError('API key k not found'))).toEqual({
      object: 'error',
      errorCode: 'AB08',
      message: 'API key k not found',
      errors: [],
    });
  });

  it("toOpenAIBody: OpenAI's error object with message, type, param and code", () => {
    expect(toOpenAIBody(ValidationError.field('temperature', 'must be between 0 and 2'))).toEqual({
      error: { message: 'temperature: must be between 0 and 2', type: 'invalid_request_error', param: 'temperature', code: 'invalid_value' },
    });
    expect(toOpenAIBody(new AuthenticationError())).toEqual({
      error: { message: 'Invalid API key', type: 'authentication_error', param: null, code: 'invalid_api_key' },
    });
  });
});

describe('asGantryError', () => {
  it('passes a GantryError through unchanged', () => {
    const err = new ConflictError('taken');
    expect(asGantryError(err)).toBe(err);
  });

  it.each([
    ['an Error', new Error('connect ECONNREFUSED 10.0.0.5:5432 password=hunter2')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'secret')")],
    ['a string', 'table secret-table not found'],
    ['undefined', undefined],
  ])('turns %s into a 500 that does not leak its message', (_what, thrown) => {
    const err = asGantryError(thrown);
    expect(err).toBeInstanceOf(InternalError);
    expect(err.status).toBe(500);
    expect(err.message).toBe('Internal server error');
    expect(err.cause).toBe(thrown);
    const rendered = JSON.stringify([toAdminBody(err), toOpenAIBody(err)]);
    expect(rendered).not.toMatch(/hunter2|secret|ECONNREFUSED/);
  });
});

describe('toResponse', () => {
  it("answers a gateway error in OpenAI's shape with the error's headers and the caller's on top", async () => {
    const res = toResponse(new RateLimitedError('slow down', { headers: { 'retry-after': '5', 'x-a': 'error' } }), 'gateway', { 'x-a': 'caller' });
    expect(res.status).toBe(429);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('x-a')).toBe('caller');
    expect(await res.json()).toEqual({ error: { message: 'slow down', type: 'rate_limit_error', param: null, code: 'rate_limit_exceeded' } });
  });

  it('answers an admin error in the admin shape with every problem', async () => {
    const res = toResponse(
      new ValidationError([
        { path: 'name', message: 'is required' },
        { path: 'value', message: 'must be a number' },
      ]),
      'admin',
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      object: 'error',
      errorCode: 'AB01',
      message: expect.any(String),
      errors: [
        { path: 'name', message: 'is required' },
        { path: 'value', message: 'must be a number' },
      ],
    });
  });

  it('turns anything else into a 500 on both surfaces without its message', async () => {
    for (const surface of ['gateway', 'admin'] as const) {
      const res = toResponse(new Error('password=hunter2'), surface);
      expect(res.status).toBe(500);
      expect(await res.text()).not.toContain('hunter2');
    }
  });
});

describe('long values in messages', () => {
  it('are cut to their start in both shapes, short ones kept whole', () => {
    const slug = 's'.repeat(3000);
    const err = new NotFoundError(`Workspace ${slug} not found; also "${'q '.repeat(100)}"`);
    const admin = JSON.stringify(toAdminBody(err));
    const openai = JSON.stringify(toOpenAIBody(err));
    for (const body of [admin, openai]) {
      expect(body).not.toContain('s'.repeat(81));
      expect(body).toContain(`${'s'.repeat(40)}… (3000 characters)`);
      expect(body).toContain('(200 characters)');
    }
    expect(clipQuoted('x-gw-config: no saved config "pc-prod-42"')).toBe('x-gw-config: no saved config "pc-prod-42"');
  });
});
