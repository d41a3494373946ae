/** Request headers about the provider: x-gw-forward-headers, provider option headers, the timeout. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { NEVER_FORWARDED, OPTION_HEADERS, parseForwardHeaders, parseOptionHeaders, parseRequestTimeout } from '../../../../layers/core/src/gateway/headers.ts';
import { withRequestOptions } from '../../../../layers/core/src/gateway/call-target.ts';
import type { ResolvedTarget } from '../../../../layers/core/src/kernel/routing.ts';

const h = (init: Record<string, string>) => new Headers(init);

describe('parseForwardHeaders', () => {
  it('reads a JSON array or a comma-separated list, lower-cased, without x-gw-* names', () => {
    expect(parseForwardHeaders(h({ 'x-gw-forward-headers': '["X-Team", "anthropic-beta", "x-gw-api-key"]' }))).toEqual(['x-team', 'anthropic-beta']);
    expect(parseForwardHeaders(h({ 'x-gw-forward-headers': ' x-a ,X-B,, x-gw-trace-id ' }))).toEqual(['x-a', 'x-b']);
    expect(parseForwardHeaders(h({}))).toEqual([]);
  });

  it('never forwards hop-by-hop or host headers', () => {
    expect(parseForwardHeaders(h({ 'x-gw-forward-headers': 'host, content-length, connection, x-ok' }))).toEqual(['x-ok']);
    for (const name of ['x-gw-api-key', 'Host', 'transfer-encoding', 'proxy-authorization']) expect(NEVER_FORWARDED.test(name)).toBe(true);
  });

  it.each([['["a", 1]'], ['[broken'], ['{"a": 1}'], ['a b'], ['x-a, bad:name']])('refuses %s naming the header', (value) => {
    try {
      parseForwardHeaders(h({ 'x-gw-forward-headers': value }));
      throw new Error('expected a refusal');
    } catch (err) {
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).param).toBe('x-gw-forward-headers');
    }
  });
});

describe('provider option headers', () => {
  it('reads every cloud header of the contract into its option name', () => {
    const headers: Record<string, string> = {};
    for (const name of Object.keys(OPTION_HEADERS)) headers[name] = `v-${name}`;
    const options = parseOptionHeaders(h(headers));
    expect(options).toMatchObject({
      azure_resource_name: 'v-x-gw-azure-resource-name',
      azure_deployment_id: 'v-x-gw-azure-deployment-id',
      azure_api_version: 'v-x-gw-azure-api-version',
      azure_model_name: 'v-x-gw-azure-model-name',
      vertex_project_id: 'v-x-gw-vertex-project-id',
      vertex_region: 'v-x-gw-vertex-region',
      aws_access_key_id: 'v-x-gw-aws-access-key-id',
      aws_secret_access_key: 'v-x-gw-aws-secret-access-key',
      aws_region: 'v-x-gw-aws-region',
      aws_session_token: 'v-x-gw-aws-session-token',
    });
    expect(parseOptionHeaders(h({ 'x-gw-aws-region': '' }))).toEqual({});
  });

  it('fills target options the target does not set itself', async () => {
    const seen: Array<Record<string, unknown>> = [];
    const call = withRequestOptions(
      async (target) => {
        seen.push({ ...target.options });
        return { status: 200, headers: {} };
      },
      { aws_region: 'eu-west-1', azure_resource_name: 'from-header' },
    );
    const target: ResolvedTarget = { path: 'config', override_params: {}, strict_openai_compliance: true, options: { azure_resource_name: 'from-config' } };
    await call(target);
    expect(seen[0]).toEqual({ azure_resource_name: 'from-config', aws_region: 'eu-west-1' });
  });

  it.each([
    ['x-gw-openai-organization', 'org\u0001x'],
    ['x-gw-aws-session-token', 'tok\u007fen'],
    ['openai-project', 'p\u000bq'],
  ])('refuses %s with a value no provider header can carry, naming the header', (name, value) => {
    const err = (() => {
      try {
        parseOptionHeaders(h({ [name]: value }));
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).param).toBe(name);
    expect((err as ValidationError).message).toBe(`${name}: must not contain line breaks, control characters or characters outside Latin-1`);
  });

  it('keeps Latin-1 letters in an option header', () => {
    expect(parseOptionHeaders(h({ 'x-gw-openai-project': 'caf\u00e9' }))).toEqual({ openai_project: 'caf\u00e9' });
  });

  it('adds nothing when the request sets no option', () => {
    const inner = async () => ({ status: 200, headers: {} });
    expect(withRequestOptions(inner, parseOptionHeaders(h({})))).toBe(inner);
  });
});

describe('parseRequestTimeout', () => {
  it('reads whole milliseconds up to 15 minutes', () => {
    expect(parseRequestTimeout(h({ 'x-gw-request-timeout': '250' }))).toBe(250);
    expect(parseRequestTimeout(h({}))).toBeUndefined();
    expect(() => parseRequestTimeout(h({ 'x-gw-request-timeout': '0' }))).toThrow(ValidationError);
    expect(() => parseRequestTimeout(h({ 'x-gw-request-timeout': '900001' }))).toThrow(ValidationError);
  });
});
