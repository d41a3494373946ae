/** The text a check reads: the answer's for after-request hooks, the request's otherwise. */
import type { CheckContext } from '../../kernel/guardrails.ts';

export const checkedText = (ctx: CheckContext): string => (ctx.event === 'afterRequestHook' ? (ctx.response?.text ?? '') : ctx.request.text);
