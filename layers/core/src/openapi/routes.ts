/**
 * `GET /v1/openapi.json` and the reference page `GET /v1/docs` (Swagger UI from the
 * `swagger-ui-dist` package, served by Gantry itself: no CDN). No authentication: the document
 * holds no data, only the API's shape. Served by the admin function (their paths are admin
 * prefixes), so neither the document nor the page's 1.7 MB script touches the gateway bundle; the
 * document is built on first request from a lazily imported chunk.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Hono } from 'hono';

/** The files of swagger-ui-dist the page uses; the Lambda build copies them into `DOCS_ASSET_DIR`. */
export const DOCS_ASSETS: Readonly<Record<string, string>> = {
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'swagger-ui.css': 'text/css; charset=utf-8',
};
export const DOCS_ASSET_DIR = 'swagger-ui';

// Relative URLs: the page also works below an API Gateway stage path (/prod/v1/docs).
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gantry API reference</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#swagger-ui', deepLinking: true });\n`;

// Swagger UI styles elements inline; scripts come from this origin only.
const PAGE_CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'";

/**
 * Where an asset is: beside the Lambda bundle (index.mjs or a chunk below it), else in the
 * installed package (tests, the local server).
 */
function assetPath(name: string): string {
  for (const dir of [`./${DOCS_ASSET_DIR}/`, `../${DOCS_ASSET_DIR}/`]) {
    const candidate = fileURLToPath(new URL(dir + name, import.meta.url));
    if (existsSync(candidate)) return candidate;
  }
  return path.join(path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')), name);
}

const cache = new Map<string, Buffer>();

async function asset(name: string): Promise<Buffer> {
  let body = cache.get(name);
  if (!body) {
    body = await readFile(assetPath(name));
    cache.set(name, body);
  }
  return body;
}

const text = (body: string, type: string, headers: Record<string, string> = {}) => new Response(body, { headers: { 'content-type': type, ...headers } });

export function mountApiDocs(app: Hono): void {
  app.get('/v1/openapi.json', async () => {
    const { openApiJson } = await import('./document.ts');
    return text(openApiJson(), 'application/json; charset=utf-8', { 'access-control-allow-origin': '*' });
  });
  app.get('/v1/docs', () => text(PAGE, 'text/html; charset=utf-8', { 'content-security-policy': PAGE_CSP }));
  app.get('/v1/docs/init.js', () => text(INIT, 'text/javascript; charset=utf-8'));
  for (const [name, type] of Object.entries(DOCS_ASSETS)) {
    app.get(
      `/v1/docs/${name}`,
      async () => new Response(new Uint8Array(await asset(name)), { headers: { 'content-type': type, 'cache-control': 'public, max-age=86400' } }),
    );
  }
}
