/**
 * The illustrative examples of CONTRIBUTING.md, compiled with the project (`npx tsc`) and imported by
 * test/docs/contributing.test.ts: each block of the page marked `<!-- from: test/docs/examples/contributing.ts -->`
 * is a verbatim excerpt of this file, so an example that no longer fits the contracts it shows
 * (`Dialect`, `GatewayHook`) fails the type check instead of misleading a reader.
 */
import type { Dialect, DialectAnswer } from '../../../layers/core/src/gateway/dialect.ts';
import type { GatewayHook } from '../../../layers/core/src/kernel/lifecycle.ts';
import { ForbiddenError, toOpenAIBody } from '../../../layers/core/src/http/errors.ts';

/** Stand-ins for what a real dialect would translate; the example is about the shape, not them. */
const toChat = (value: Record<string, unknown>): Record<string, unknown> => ({
  model: value.model,
  messages: [{ role: 'user', content: String(value.input) }],
});
const renderResponses = async (a: DialectAnswer): Promise<Response> => new Response(null, { status: a.answer.status });

export const responsesDialect: Dialect = {
  name: 'responses',
  inbound: (headers) => ({ headers }),
  translate: (value) => ({ openai: toChat(value), wrapCaller: (inner) => inner, answer: renderResponses }),
  refusalBody: (e) => toOpenAIBody(e),
};
// routes.ts: { ...route('POST', '/responses', {...}), dialect: lazyDialect(() => import('./responses.ts').then((m) => m.responsesDialect)) }

export const auditHook: GatewayHook = {
  name: 'audit',
  async admitTarget(record, target) {
    return target.provider === 'forbidden' ? new ForbiddenError('not here') : undefined;
  },
  complete(record) {
    /* off the request path */
  },
};
