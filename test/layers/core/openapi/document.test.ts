/**
 * The OpenAPI document: every route of the route tables is in it with its scope and its success
 * answer, validated bodies carry the schema that validates them, and every example in it passes
 * that schema.
 */
import { describe, expect, it } from 'vitest';
import { parseBody } from '../../../../layers/core/src/admin/body.ts';
import { ADMIN_ROUTES, PUBLIC_ADMIN_ROUTES } from '../../../../layers/core/src/admin/routes.ts';
import { isAdminPath } from '../../../../layers/core/src/http/surfaces.ts';
import { GATEWAY_ROUTES } from '../../../../layers/core/src/gateway/routes.ts';
import { parseChatRequest } from '../../../../layers/core/src/gateway/validate/chat.ts';
import { anthropicToOpenAI } from '../../../../layers/core/src/gateway/anthropic-inbound.ts';
import {
  adminErrorSchema,
  buildOpenApiDocument,
  GATEWAY_EXTRA_ROUTES,
  OPEN_ROUTES,
  openAIErrorSchema,
  openApiPath,
  PROMPT_CALL,
} from '../../../../layers/core/src/openapi/document.ts';
import { GATEWAY_BODIES } from '../../../../layers/core/src/openapi/gateway-bodies.ts';
import { DOCUMENTED_ADMIN_ROUTES } from '../../../../layers/core/src/openapi/answers/admin.ts';
import { DOCUMENTED_GATEWAY_ROUTES } from '../../../../layers/core/src/openapi/answers/gateway.ts';

type Json = Record<string, unknown>;

const doc = buildOpenApiDocument() as { openapi: string; paths: Record<string, Record<string, Json>>; components: { schemas: Json; securitySchemes: Json } };

const operation = (method: string, path: string): Json | undefined => doc.paths[path]?.[method.toLowerCase()];

/** Every `example` in the tree, with the JSON path that leads to it. */
function examples(node: unknown, at: string[] = [], out: { at: string[]; value: unknown }[] = []): { at: string[]; value: unknown }[] {
  if (Array.isArray(node)) node.forEach((v, i) => examples(v, [...at, String(i)], out));
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === 'example') out.push({ at, value: v });
      else if (k === 'examples' && Array.isArray(v)) v.forEach((e) => out.push({ at, value: e }));
      else examples(v, [...at, k], out);
    }
  }
  return out;
}

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 with both security schemes and both error shapes', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['bearerJwt', 'gatewayKey']);
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['AdminError', 'OpenAIError']));
  });

  it('documents the success answer of every operation: a 2xx status and a schema for each content type', () => {
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        operations++;
        const success = Object.entries(op.responses as Record<string, { content?: Record<string, { schema?: Json }> }>).filter(([status]) =>
          /^2\d\d$/.test(status),
        );
        expect(success.length, `${method} ${path}`).toBeGreaterThan(0);
        for (const [, res] of success) {
          expect(Object.keys(res.content ?? {}).length, `${method} ${path}`).toBeGreaterThan(0);
          for (const [type, media] of Object.entries(res.content ?? {})) expect(media.schema, `${method} ${path} ${type}`).toBeDefined();
        }
      }
    }
    expect(operations).toBeGreaterThanOrEqual(235);
  });

  it('names the fields of admin answers: an API key, a list of configs', () => {
    const key = doc.components.schemas.ApiKeyView as { properties: Json; additionalProperties: boolean };
    expect(Object.keys(key.properties)).toEqual(expect.arrayContaining(['id', 'name', 'workspace_id', 'scopes', 'key', 'expires_at']));
    expect(key.additionalProperties).toBe(false);
    const configs = (operation('GET', '/v1/configs')?.responses as Record<string, { content: Record<string, { schema: Json }> }>)['200']?.content[
      'application/json'
    ]?.schema;
    expect(JSON.stringify(configs)).toContain('#/components/schemas/ConfigView');
  });

  it('every reference leads to a component', () => {
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1] as string);
    expect(refs.length).toBeGreaterThan(100);
    for (const ref of new Set(refs)) expect(doc.components.schemas[ref], ref).toBeDefined();
    expect(JSON.stringify(doc)).not.toContain('#/$defs/');
  });

  it('documents the answer of exactly the routes of the route tables', () => {
    const admin = [...PUBLIC_ADMIN_ROUTES, ...ADMIN_ROUTES].map((r) => `${r.method} ${r.path}`);
    expect([...DOCUMENTED_ADMIN_ROUTES].sort()).toEqual([...new Set(admin)].sort());
    const gateway = [...GATEWAY_ROUTES.map((r) => `${r.spec.method} ${r.path}`), ...GATEWAY_EXTRA_ROUTES.map((r) => `${r.method} ${r.path.slice(3)}`)];
    expect([...DOCUMENTED_GATEWAY_ROUTES].sort()).toEqual([...new Set(gateway)].sort());
  });

  it('has every gateway route, with its scope and the OpenAI error shape', () => {
    const routes = [...GATEWAY_ROUTES.map((r) => ({ method: r.spec.method, path: `/v1${r.path}`, dialect: r.dialect !== undefined })), ...GATEWAY_EXTRA_ROUTES];
    expect(routes.length).toBeGreaterThan(50);
    for (const r of routes) {
      const op = operation(r.method, r.path);
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      expect(op?.['x-gw-scope']).toBe('completions.write');
      // Routes in Anthropic's format answer errors in Anthropic's shape.
      const shape = 'dialect' in r && r.dialect ? "Anthropic's format" : '#/components/schemas/OpenAIError';
      expect(JSON.stringify((op?.responses as Json).default), r.path).toContain(shape);
    }
  });

  it('has every admin route, with its own scope and the admin error shape', () => {
    for (const r of ADMIN_ROUTES) {
      const op = operation(r.method, openApiPath(r.path));
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      // The router takes the first route of a method and path; so does the document.
      const first = ADMIN_ROUTES.find((o) => o.method === r.method && openApiPath(o.path) === openApiPath(r.path));
      expect(op?.['x-gw-scope'], `${r.method} ${r.path}`).toBe(first?.scope);
      expect(op?.security).toEqual([{ gatewayKey: [] }, { bearerJwt: [] }]);
      expect(JSON.stringify((op?.responses as Json).default)).toContain('#/components/schemas/AdminError');
    }
    for (const r of [...PUBLIC_ADMIN_ROUTES, ...OPEN_ROUTES]) expect(operation(r.method, openApiPath(r.path))?.security, r.path).toEqual([]);
  });

  it('documents the schema of every validated body', () => {
    for (const r of GATEWAY_ROUTES) {
      if (r.spec.body !== 'json' || r.dialect || !r.spec.validate || r.spec.prompt === 'completions') continue;
      expect(GATEWAY_BODIES.has(r.spec.validate as never), `${r.spec.method} ${r.path}`).toBe(true);
      const schema = (operation(r.spec.method, `/v1${r.path}`)?.requestBody as { content: Record<string, { schema: Json }> }).content['application/json']
        ?.schema;
      expect(schema?.type, r.path).toBe('object');
      expect(Object.keys((schema?.properties as Json) ?? {}).length, r.path).toBeGreaterThan(0);
    }
    const chat = operation('POST', '/v1/chat/completions')?.requestBody as { content: Record<string, { schema: { required: string[]; properties: Json } }> };
    expect(chat.content['application/json']?.schema.required).toEqual(expect.arrayContaining(['model', 'messages']));
    for (const r of ADMIN_ROUTES.filter((a) => a.body)) {
      expect(operation(r.method, openApiPath(r.path))?.requestBody, `${r.method} ${r.path}`).toBeDefined();
    }
    const key = operation('POST', '/v1/api-keys/{type}/{subType}') ?? operation('POST', '/v1/api-keys/workspace/service');
    expect(JSON.stringify(key?.requestBody)).toContain('expires_at');
  });

  it('every example validates against the schema of its place', () => {
    const found = examples(doc.paths);
    expect(found.length).toBeGreaterThan(100);
    const gatewayRoute = (path: string, method: string) => GATEWAY_ROUTES.find((r) => `/v1${r.path}` === path && r.spec.method.toLowerCase() === method);
    const adminRoute = (path: string, method: string) => ADMIN_ROUTES.find((r) => openApiPath(r.path) === path && r.method.toLowerCase() === method);
    let requests = 0;
    for (const { at, value } of found) {
      const [path = '', method = '', part] = at;
      const where = at.join('.');
      if (part === 'responses') {
        // Errors take the shape of the surface the path belongs to, as errorResponse decides at run time.
        const schema = isAdminPath(path) ? adminErrorSchema : openAIErrorSchema;
        expect(schema.safeParse(value).success, where).toBe(true);
        continue;
      }
      expect(part, where).toBe('requestBody');
      requests++;
      const g = gatewayRoute(path, method);
      if (g?.dialect) expect(() => parseChatRequest(anthropicToOpenAI(value))).not.toThrow();
      else if (g?.spec.prompt === 'completions') expect(PROMPT_CALL.schema.safeParse(value).success, where).toBe(true);
      else if (g) expect(() => g.spec.validate?.(value as Json), where).not.toThrow();
      else {
        const a = adminRoute(path, method);
        expect(a?.body, where).toBeDefined();
        expect(() => parseBody(a?.body as never, value), where).not.toThrow();
      }
    }
    expect(requests).toBeGreaterThanOrEqual(15);
  });
});
