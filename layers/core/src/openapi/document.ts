/**
 * The OpenAPI 3.1 document of the gateway and the admin API, generated from the route tables and
 * the zod schemas that validate their bodies (docs/design/spec.md#admin-conventions: the service describes itself). Every
 * operation names its scope (`x-gw-scope`) and security, its body where one is validated, its
 * success answer (openapi/answers/, schemas tied to the types the routes answer with) and its
 * errors in the shape its surface answers with. Built once per process, on first request.
 */
import * as z from 'zod';
import type { AdminRoute, PublicAdminRoute } from '../admin/route.ts';
import { ADMIN_ROUTES, PUBLIC_ADMIN_ROUTES } from '../admin/routes.ts';
import { renderPromptSchema } from '../admin/prompt-render/schema.ts';
import type { GatewayRoute } from '../gateway/routes.ts';
import { GATEWAY_ROUTES } from '../gateway/routes.ts';
import { toAdminBody, toOpenAIBody, ValidationError } from '../http/errors.ts';
import { ANTHROPIC_EXAMPLE, GATEWAY_BODIES } from './gateway-bodies.ts';
import { adminAnswer } from './answers/admin.ts';
import type { Answer } from './answers/common.ts';
import { gatewayAnswer } from './answers/gateway.ts';
import { AnswerSchemas } from './answers/render.ts';

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

/** Anthropic's error shape, answered by the routes in its format. */
const ANTHROPIC_ERROR = {
  type: 'object',
  properties: {
    type: { const: 'error' },
    error: { type: 'object', properties: { type: { type: 'string' }, message: { type: 'string' } }, required: ['type', 'message'] },
  },
  required: ['type', 'error'],
};

/**
 * A prompt's completions take the prompt call (gateway/prompt-input.ts), not the chat request it
 * renders to: the render body (admin/prompt-render/schema.ts) and `stream`.
 */
export const PROMPT_CALL = {
  schema: renderPromptSchema.extend({ stream: z.boolean().optional() }),
  example: { variables: { question: 'What is Gantry?' }, max_tokens: 200 },
};

/** The success responses of an operation, from its documented answer. */
function successResponses(answer: Answer | undefined, schemas: AnswerSchemas, where: string): Json {
  if (!answer) throw new Error(`No documented answer for ${where} (openapi/answers/)`);
  const status = String(answer.status ?? 200);
  const schema = answer.contentType ? { type: 'string', contentMediaType: answer.contentType } : schemas.schemaOf(answer.schema);
  const content: Json = { [answer.contentType ?? 'application/json']: { schema } };
  if (answer.stream) content['text/event-stream'] = { schema: { type: 'string', description: 'Server-sent events' } };
  return { [status]: { description: answer.description ?? 'Success', content } };
}

function gatewayOperation(route: GatewayRoute, schemas: AnswerSchemas): Json {
  const { spec } = route;
  // The one dialect today: Anthropic's Messages format, errors included (gateway/messages.ts).
  const anthropic = route.dialect !== undefined;
  const errors = anthropic
    ? { default: { description: "An error in Anthropic's format", content: { 'application/json': { schema: ANTHROPIC_ERROR } } } }
    : errorResponses('gateway');
  const op: Json = {
    tags: ['gateway'],
    operationId: `gateway_${spec.method.toLowerCase()}${route.path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    summary: `${spec.endpoint}${anthropic ? ' (Anthropic Messages format)' : ''}`,
    'x-gw-scope': 'completions.write',
    security: SECURED,
    parameters: pathParameters(route.path),
    responses: { ...successResponses(gatewayAnswer(spec.method, route.path), schemas, `${spec.method} ${route.path}`), ...errors },
  };
  if (spec.body === 'json') {
    const documented = spec.prompt === 'completions' ? PROMPT_CALL : spec.validate && !anthropic ? GATEWAY_BODIES.get(spec.validate) : undefined;
    const described = anthropic ? "Anthropic's Messages request" : 'A JSON object, sent to the provider as it is';
    const schema = documented ? jsonSchema(documented.schema) : { type: 'object', description: described };
    const example = documented?.example ?? (anthropic ? ANTHROPIC_EXAMPLE : undefined);
    op.requestBody = { required: !spec.optionalBody, content: { 'application/json': { schema, ...(example ? { example } : {}) } } };
  } else if (spec.body === 'multipart') {
    op.requestBody = {
      required: true,
      content: { 'multipart/form-data': { schema: { type: 'object', description: 'Form fields and files as OpenAI documents them' } } },
    };
  }
  return op;
}

function adminOperation(route: AdminRoute | PublicAdminRoute, path: string, schemas: AnswerSchemas): Json {
  const scoped = 'scope' in route;
  const op: Json = {
    tags: [path.split('/')[2] ?? 'admin'],
    operationId: `admin_${route.method.toLowerCase()}${path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    ...(scoped ? { 'x-gw-scope': route.scope, security: SECURED } : { security: [], description: 'Authenticated by the invite token it carries' }),
    ...(scoped && route.roles ? { 'x-gw-roles': route.roles } : {}),
    ...(scoped && route.feature ? { 'x-gw-feature': route.feature } : {}),
    parameters: pathParameters(path),
    responses: { ...successResponses(adminAnswer(route.method, route.path), schemas, `${route.method} ${route.path}`), ...errorResponses('admin') },
  };
  if (scoped && route.body) {
    op.requestBody = {
      required: true,
      content: { 'application/json': { schema: jsonSchema(route.body), ...(route.example !== undefined ? { example: route.example } : {}) } },
    };
  }
  return op;
}

/** The answers of the routes the service serves itself. */
const OPEN_ANSWERS: Readonly<Record<string, Json>> = {
  '/v1/health': {
    '200': {
      description: 'Healthy',
      content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' }, spool: { type: 'object' } }, required: ['status'] } } },
    },
    '503': {
      description: 'Degraded: `checks` names what fails',
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: { status: { const: 'degraded' }, checks: { type: 'object', additionalProperties: { type: 'string' } }, spool: { type: 'object' } },
            required: ['status', 'checks'],
          },
        },
      },
    },
  },
  '/v1/openapi.json': {
    '200': { description: 'This document', content: { 'application/json': { schema: { type: 'object', required: ['openapi', 'info', 'paths'] } } } },
  },
  '/v1/docs': { '200': { description: 'The reference page', content: { 'text/html': { schema: { type: 'string' } } } } },
};

function openOperation(r: { method: string; path: string; summary: string }): Json {
  return {
    tags: ['service'],
    operationId: `service_${r.method.toLowerCase()}${r.path.replace(/[^A-Za-z0-9]+/g, '_')}`,
    summary: r.summary,
    security: [],
    responses: OPEN_ANSWERS[r.path] ?? {},
  };
}

function add(paths: Record<string, Json>, path: string, method: string, op: Json): void {
  const item = (paths[path] ??= {});
  // The first route of a path and method wins, as in the router.
  item[method.toLowerCase()] ??= op;
}

export function buildOpenApiDocument(): Json {
  const paths: Record<string, Json> = {};
  const schemas = new AnswerSchemas();
  for (const r of OPEN_ROUTES) add(paths, r.path, r.method, openOperation(r));
  for (const r of GATEWAY_EXTRA_ROUTES) {
    const success = successResponses(gatewayAnswer(r.method, r.path.slice(3)), schemas, `${r.method} ${r.path}`);
    add(paths, r.path, r.method, {
      ...openOperation(r),
      tags: ['gateway'],
      'x-gw-scope': 'completions.write',
      security: SECURED,
      parameters: pathParameters(r.path),
      responses: { ...success, ...errorResponses('gateway') },
    });
  }
  for (const r of GATEWAY_ROUTES) add(paths, `/v1${r.path}`, r.spec.method, gatewayOperation(r, schemas));
  for (const r of [...PUBLIC_ADMIN_ROUTES, ...ADMIN_ROUTES]) add(paths, openApiPath(r.path), r.method, adminOperation(r, openApiPath(r.path), schemas));
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
      schemas: { OpenAIError: jsonSchema(openAIErrorSchema), AdminError: jsonSchema(adminErrorSchema), ...schemas.components },
    },
  };
}

let cached: string | undefined;

/** The document as JSON text, built on first use. */
export function openApiJson(): string {
  cached ??= JSON.stringify(buildOpenApiDocument());
  return cached;
}
