/**
 * A /v1/responses request that names no Gantry prompt is read and parsed once: the prompt phase
 * hands the body it read to the pipeline, which forwards the client's bytes as they came.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startGantry, type TestGantry } from '../../../support/gantry.ts';
import { startMockOpenAI, type MockOpenAI } from '../../../support/mock-openai.ts';

describe('a Responses body without a prompt', () => {
  let gw: TestGantry;
  let mock: MockOpenAI;
  let key: string;

  beforeAll(async () => {
    [gw, mock] = await Promise.all([startGantry('direct'), startMockOpenAI()]);
    key = await gw.workspaceKey(['completions.write']);
  });
  afterAll(async () => {
    await gw?.close();
    await mock?.close();
  });

  it('is parsed once by the gateway and reaches the provider byte for byte', async () => {
    // Spacing no serialiser would produce: the provider must get exactly these bytes.
    const body = `{ "model" : "gpt-4o",  "input" : "parse-once-${Date.now()}" }`;
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const res = await fetch(`${gw.url}/v1/responses`, {
        method: 'POST',
        headers: {
          'x-gw-api-key': key,
          authorization: 'Bearer sk-p',
          'content-type': 'application/json',
          'x-gw-provider': 'openai',
          'x-gw-custom-host': `${mock.url}/v1`,
        },
        body,
      });
      expect(res.status).toBe(200);
      await res.text();
      expect(mock.received.at(-1)?.body).toBe(body);
      // The gateway's parse, and the mock provider's own one of what it received (same process).
      const ofBody = parse.mock.calls.filter(([text]) => text === body);
      expect(ofBody).toHaveLength(2);
    } finally {
      parse.mockRestore();
    }
  });
});
