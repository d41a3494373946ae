import { describe, expect, it } from 'vitest';
import { subprotocolCredentials } from '../../../../../layers/core/src/gateway/realtime/connect.ts';
import { addUsage, sendableCode, type RealtimeUsage } from '../../../../../layers/core/src/gateway/realtime/relay.ts';

describe('realtime close codes', () => {
  it('passes on every code a peer may be sent and maps the ones that only describe a close', () => {
    expect([1000, 1001, 1008, 1011, 3000, 4001, 4999].map(sendableCode)).toEqual([1000, 1001, 1008, 1011, 3000, 4001, 4999]);
    expect(sendableCode(1005)).toBe(1000);
    expect(sendableCode(1006)).toBe(1011);
    expect(sendableCode(1015)).toBe(1011);
    expect([1004, 999, 2000, 5000].map(sendableCode)).toEqual([1000, 1000, 1000, 1000]);
  });
});

describe('realtime usage', () => {
  it('sums response.done usage, counting missing, negative or non-numeric fields as zero', () => {
    const sum: RealtimeUsage = {
      total_tokens: 0,
      input_tokens: 0,
      output_tokens: 0,
      input_token_details: { text_tokens: 0, audio_tokens: 0, cached_tokens: 0 },
      output_token_details: { text_tokens: 0, audio_tokens: 0 },
    };
    addUsage(sum, {
      total_tokens: 30,
      input_tokens: 20,
      output_tokens: 10,
      input_token_details: { text_tokens: 5, audio_tokens: 15, cached_tokens: 4 },
      output_token_details: { audio_tokens: 10 },
    });
    addUsage(sum, { input_tokens: 7, output_tokens: -3, input_token_details: { text_tokens: 'many' } });
    expect(sum).toEqual({
      total_tokens: 37,
      input_tokens: 27,
      output_tokens: 10,
      input_token_details: { text_tokens: 5, audio_tokens: 15, cached_tokens: 4 },
      output_token_details: { text_tokens: 0, audio_tokens: 10 },
    });
  });
});

describe('realtime subprotocol credentials', () => {
  it('takes a gateway key and a provider key from the subprotocols and accepts only a plain one', () => {
    const { headers, protocol } = subprotocolCredentials(
      new Headers({ 'sec-websocket-protocol': 'realtime, openai-insecure-api-key.gw_abc, openai-beta.realtime-v1, other' }),
    );
    expect(protocol).toBe('realtime');
    expect(headers.get('x-gw-api-key')).toBe('gw_abc');
    expect(headers.get('openai-beta')).toBe('realtime=v1');
    expect(headers.get('sec-websocket-protocol')).toBeNull();

    const provider = subprotocolCredentials(new Headers({ 'sec-websocket-protocol': 'openai-insecure-api-key.sk-provider' }));
    expect(provider.protocol).toBeUndefined();
    expect(provider.headers.get('authorization')).toBe('Bearer sk-provider');
  });

  it('never lets a subprotocol replace a key the headers carry', () => {
    const { headers } = subprotocolCredentials(
      new Headers({
        'x-gw-api-key': 'gw_header',
        authorization: 'Bearer sk-header',
        'sec-websocket-protocol': 'openai-insecure-api-key.gw_other, openai-insecure-api-key.sk-other',
      }),
    );
    expect(headers.get('x-gw-api-key')).toBe('gw_header');
    expect(headers.get('authorization')).toBe('Bearer sk-header');
  });
});
