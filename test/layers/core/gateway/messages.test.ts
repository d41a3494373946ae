/** The pipeline side of /v1/messages: where the gateway key comes from, and what only Anthropic takes. */
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../../layers/core/src/http/errors.ts';
import { anthropicTokenUsage, inboundHeaders, toChatRequest } from '../../../../layers/core/src/gateway/messages.ts';

describe('inboundHeaders', () => {
  it('keeps x-gw-api-key as the gateway key; x-api-key is then the provider key', () => {
    const h = new Headers({ 'x-gw-api-key': 'gw_1', 'x-api-key': 'sk-ant', authorization: 'Bearer sk-other' });
    const { headers, providerKey } = inboundHeaders(h);
    expect(headers).toBe(h);
    expect(providerKey).toBe('sk-ant');
  });

  it('takes the gateway key from x-api-key and drops that header', () => {
    const { headers, providerKey } = inboundHeaders(new Headers({ 'x-api-key': 'gw_2', authorization: 'Bearer sk-provider' }));
    expect(headers.get('x-gw-api-key')).toBe('gw_2');
    expect(headers.get('x-api-key')).toBeNull();
    expect(headers.get('authorization')).toBe('Bearer sk-provider');
    expect(providerKey).toBeUndefined();
  });

  it('takes the gateway key from Authorization when nothing else carries one, and drops it', () => {
    const { headers, providerKey } = inboundHeaders(new Headers({ authorization: 'Bearer gw_3' }));
    expect(headers.get('x-gw-api-key')).toBe('gw_3');
    expect(headers.get('authorization')).toBeNull();
    expect(providerKey).toBeUndefined();
  });

  it('leaves a JWT caller alone', () => {
    const h = new Headers({ 'x-gw-jwt': 'eyJ...', authorization: 'Bearer sk-provider' });
    expect(inboundHeaders(h).headers).toBe(h);
  });
});

describe('toChatRequest', () => {
  const base = { model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] };

  it('translates a Messages request; count_tokens without max_tokens and never streamed', () => {
    expect(toChatRequest('messages', base).chat).toEqual({ model: 'claude-x', max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] });
    const { max_tokens: _m, ...count } = base;
    expect(toChatRequest('count_tokens', { ...count, stream: true }).chat).toEqual({
      model: 'claude-x',
      max_tokens: 1,
      messages: [{ role: 'user', content: 'Hi' }],
    });
  });

  it('defers what only Anthropic takes, and refuses the rest at once', () => {
    const r = toChatRequest('messages', { ...base, stream: true, mcp_servers: [{ type: 'url', url: 'https://mcp.example.com' }] });
    expect(r.anthropicOnly).toBeInstanceOf(ValidationError);
    expect(r.anthropicOnly?.problems[0]?.path).toBe('mcp_servers');
    expect(r.chat).toMatchObject({ model: 'claude-x', max_tokens: 10, stream: true, stream_options: { include_usage: true } });
    expect(() => toChatRequest('messages', { ...base, max_tokens: 0 })).toThrow(/max_tokens/);
  });
});

it('counts Anthropic usage as the record does: prompt tokens include cache reads and writes', () => {
  expect(anthropicTokenUsage({ input_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 20, output_tokens: 7 })).toEqual({
    prompt_tokens: 125,
    completion_tokens: 7,
    total_tokens: 132,
    cached_tokens: 100,
  });
  expect(anthropicTokenUsage(undefined)).toBeUndefined();
});
