/**
 * The OpenAPI 3.1 document of the gateway and the admin API, generated from the route tables and
 * the zod schemas that validate their bodies (docs/design/spec.md#admin-conventions: the service describes itself). Every
 * operation names its scope (`x-gw-scope`) and security, its body where one is validated, and its
 * errors in the shape its surface answers with. Built once per process, on first request.
 */
import * as z from 'zod';
import type { AdminRoute, PublicAdminRoute } from '../admin/route.ts';
import { ADMIN_ROUTES, PUBLIC_ADMIN_ROUTES } from '../admin/routes.ts';
import type { GatewayRoute } from '../gateway/routes.ts';
import { GATEWAY_ROUTES } from '../gateway/routes.ts';
import { toAdminBody, toOpenAIBody, ValidationError } from '../http/errors.ts';
import { ANTHROPIC_EXAMPLE, GATEWAY_BODIES } from './gateway-bodies.ts';

type Json = Record<string, unknown>;

const problem = z.object({ path: z.string(), message: z.string() });

/** OpenAI's error shape, answered by every gateway route. */
export const openAIErrorSchema = z.object({
  error: z.object({
    message: z.string(),
    type: z.string(),
    param: z.string().nullable(),
    code: z.string().nullable(),
    errors: z.array(problem).optional(),
  }),
});

/** The admin error shape (docs/design/spec.md#error-codes), answered by every admin route. */
export const adminErrorSchema = z.object({
  object: z.literal('error'),
  errorCode: z.enum(['AB01', 'AB02', 'AB03', 'AB04', 'AB05', 'AB06', 'AB07', 'AB08', 'AB09']),
  message: z.string(),
  errors: z.array(problem),
});

/** Real refusals, rendered by the same functions that render errors at run time. */
export const ERROR_EXAMPLES = {
  gateway: toOpenAIBody(ValidationError.field('temperature', 'must be at most 2')),
  admin: toAdminBody(new ValidationError([{ path: '', message: 'unknown field expire_at; did you mean expires_at?' }])),
};

/** Gateway routes the gateway module mounts outside the table (gateway/models.ts). */
export const GATEWAY_EXTRA_ROUTES: readonly { method: string; path: string; summary: string }[] = [
  { method: 'GET', path: '/v1/models', summary: 'List models' },
  { method: 'GET', path: '/v1/models/{model}', summary: 'Retrieve a model' },
];

/** Routes without authentication; the service answers them itself. */
export const OPEN_ROUTES: readonly { method: string; path: string; summary: string }[] = [
  { method: 'GET', path: '/v1/health', summary: 'Health: ok, or degraded when the database cannot be written' },
  { method: 'GET', path: '/v1/openapi.json', summary: 'This document' },
  { method: 'GET', path: '/v1/docs', summary: 'The API reference page (Swagger UI) for this document' },
];

/** `/v1/providers/:slug` and `/v1/models/:model{.+}` -> `/v1/providers/{slug}`, `/v1/models/{model}`. */
export const openApiPath = (honoPath: string): string => honoPath.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, '{$1}');

function jsonSchema(schema: z.core.$ZodType): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any', reused: 'inline', cycles: 'ref' }) as Json;
  delete out.$schema;
  return out;
}

function pathParameters(path: string): Json[] {
  return [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
}

const errorResponses = (surface: 'gateway' | 'admin'): Json => {
  const ref = { $ref: `#/components/schemas/${surface === 'gateway' ? 'OpenAIError' : 'AdminError'}` };
  const description = surface === 'gateway' ? "An error in OpenAI's shape; `param` names the field" : 'An admin error: AB01 lists every field problem';
  return {
    '400': { description: 'Invalid request', content: { 'application/json': { schema: ref, example: ERROR_EXAMPLES[surface] } } },
    default: { description, content: { 'application/json': { schema: ref } } },
  };
};

const SECURED = [{ gatewayKey: [] }, { bearerJwt: [] }];

function gatewayOperation(route: GatewayRoute): Json {
  const { spec } = route;
  // The one dialect today: Anthropic's Messages format, errors included (gateway/messages.ts).
  const anthropic = route.dialect !== undefined;
  const errors = anthropic
    ? { default: { description: "An error in Anthropic's format: {type: 'error', error: {type, message}}", content: { 'application/json': {} } } }
    : errorResponses('gateway');
  const op: Json = {
    tags: ['gateway'],
    operationId: `gateway_${spec.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    summary: `${spec.endpoint}${anthropic ? ' (Anthropic Messages format)' : ''}`,
    'x-gw-scope': 'completions.write',
    security: SECURED,
    parameters: pathParameters(route.path),
    responses: {
      '200': {
        description: spec.stream ? "The provider's answer in OpenAI's format; server-sent events when the body says stream: true" : "The provider's answer in OpenAI's format",
        content: { 'application/json': {}, ...(spec.stream ? { 'text/event-stream': {} } : {}) },
      },
      ...errors,
    },
  };
  if (spec.body === 'json') {
    const documented = spec.validate && !anthropic ? GATEWAY_BODIES.get(spec.validate) : undefined;
    const described = anthropic ? "Anthropic's Messages request" : 'A JSON object, sent to the provider as it is';
    const schema = documented ? jsonSchema(documented.schema) : { type: 'object', description: described };
    const example = documented?.example ?? (anthropic ? ANTHROPIC_EXAMPLE : undefined);
    op.requestBody = { required: !spec.optionalBody, content: { 'application/json': { schema, ...(example ? { example } : {}) } } };
  } else if (spec.body === 'multipart') {
    op.requestBody = { required: true, content: { 'multipart/form-data': { schema: { type: 'object', description: 'Form fields and files as OpenAI documents them' } } } };
  }
  return op;
}

function adminOperation(route: AdminRoute | PublicAdminRoute, path: string): Json {
  const scoped = 'scope' in route;
  const op: Json = {
    tags: [path.split('/')[2] ?? 'admin'],
    operationId: `admin_${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    ...(scoped ? { 'x-gw-scope': route.scope, security: SECURED } : { security: [], description: 'Authenticated by the invite token it carries' }),
    ...(scoped && route.roles ? { 'x-gw-roles': route.roles } : {}),
    ...(scoped && route.feature ? { 'x-gw-feature': route.feature } : {}),
    parameters: pathParameters(path),
    responses: { '200': { description: 'Success', content: { 'application/json': {} } }, ...errorResponses('admin') },
  };
  if (scoped && route.body) {
    op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(route.body), ...(route.example !== undefined ? { example: route.example } : {}) } } };
  }
  return op;
}

function openOperation(r: { method: string; path: string; summary: string }): Json {
  const html = r.path === '/v1/docs';
  return {
    tags: ['service'],
    operationId: `service_${r.method.toLowerCase()}${r.path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    summary: r.summary,
    security: [],
    responses: { '200': { description: r.summary, content: { [html ? 'text/html' : 'application/json']: {} } } },
  };
}

function add(paths: Record<string, Json>, path: string, method: string, op: Json): void {
  const item = (paths[path] ??= {});
  // The first route of a path and method wins, as in the router.
  item[method.toLowerCase()] ??= op;
}

export function buildOpenApiDocument(): Json {
  const paths: Record<string, Json> = {};
  for (const r of OPEN_ROUTES) add(paths, r.path, r.method, openOperation(r));
  for (const r of GATEWAY_EXTRA_ROUTES) {
    add(paths, r.path, r.method, { ...openOperation(r), tags: ['gateway'], 'x-gw-scope': 'completions.write', security: SECURED, parameters: pathParameters(r.path), responses: { '200': { description: r.summary, content: { 'application/json': {} } }, ...errorResponses('gateway') } });
  }
  for (const r of GATEWAY_ROUTES) add(paths, `/v1${r.path}`, r.spec.method, gatewayOperation(r));
  for (const r of [...PUBLIC_ADMIN_ROUTES, ...ADMIN_ROUTES]) add(paths, openApiPath(r.path), r.method, adminOperation(r, openApiPath(r.path)));
  return {
    openapi: '3.1.0',
    info: {
      title: 'Gantry',
      version: '1',
      description: 'The AI gateway (OpenAI-compatible routes) and its admin API. `x-gw-scope` names the scope an operation needs.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: {
        gatewayKey: { type: 'apiKey', in: 'header', name: 'x-gw-api-key', description: 'A Gantry API key' },
        bearerJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A JWT, where JWT authentication is configured' },
      },
      schemas: { OpenAIError: jsonSchema(openAIErrorSchema), AdminError: jsonSchema(adminErrorSchema) },
    },
  };
}

let cached: string | undefined;

/** The document as JSON text, built on first use. */
export function openApiJson(): string {
  cached ??= JSON.stringify(buildOpenApiDocument());
  return cached;
}
