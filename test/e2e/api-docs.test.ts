/**
 * The service describes itself: `GET /v1/openapi.json` and the reference page `GET /v1/docs` with
 * its script and styles, without a key, in both local modes (in lambda mode through the admin
 * function, as API Gateway routes them), never through the passthrough.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGantry, type TestGantry } from '../support/gantry.ts';

describe.each(['direct', 'lambda'] as const)('API description (%s mode)', (mode) => {
  let gw: TestGantry;
  beforeAll(async () => {
    gw = await startGantry(mode);
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('serves the OpenAPI document without a key', async () => {
    const res = await fetch(`${gw.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, { 'x-gw-scope'?: string }>> };
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.paths['/v1/chat/completions']?.post?.['x-gw-scope']).toBe('completions.write');
    expect(doc.paths['/v1/configs']?.post?.['x-gw-scope']).toBe('configs.create');
    expect(doc.paths['/v1/openapi.json']?.get).toBeDefined();
  });

  it('serves the reference page and its assets from the package, not a CDN', async () => {
    const page = await fetch(`${gw.url}/v1/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    const html = await page.text();
    expect(html).toContain('docs/swagger-ui-bundle.js');
    expect(html).not.toMatch(/https?:\/\//);
    const init = await (await fetch(`${gw.url}/v1/docs/init.js`)).text();
    expect(init).toContain("url: 'openapi.json'");
    for (const [file, type, size] of [
      ['swagger-ui-bundle.js', 'text/javascript', 500_000],
      ['swagger-ui.css', 'text/css', 10_000],
    ] as const) {
      const res = await fetch(`${gw.url}/v1/docs/${file}`);
      expect(res.status, file).toBe(200);
      expect(res.headers.get('content-type'), file).toContain(type);
      expect((await res.arrayBuffer()).byteLength, file).toBeGreaterThan(size);
    }
  });

  it('answers an unknown docs path as an admin 404, not a provider call', async () => {
    const res = await fetch(`${gw.url}/v1/docs/nothing-here`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ object: 'error', errorCode: 'AB02', message: 'No route for GET /v1/docs/nothing-here' });
  });
});
