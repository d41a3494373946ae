/**
 * `POST /v1/prompts/{id}/render`: the request a prompt version stands for, rendered with the
 * caller's variables (prompts/render.ts). Rendering reads a prompt, so it takes `prompts.read`
 * (members render as the security settings let them view prompts). The prompt resource's own
 * routes (create, versions, labels) live with the resource.
 */
import { rendererOf } from '../../prompts/render.ts';
import { withBody } from '../body.ts';
import type { AdminRoute } from '../route.ts';
import { renderPromptSchema } from './schema.ts';

export const promptRenderRoutes: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/v1/prompts/:promptId/render',
    scope: 'prompts.read',
    audit: { action: 'render' },
    example: { variables: { question: 'What is Gantry?' }, temperature: 0.2 },
    ...withBody(renderPromptSchema, async (ctx, body) => {
      const { variables, hyperparameters, lenient, ...root } = body;
      const rendered = await rendererOf(ctx.deps.prompts).render(ctx.principal, ctx.params.promptId ?? '', {
        variables,
        hyperparameters: { ...root, ...hyperparameters },
        ...(lenient === undefined ? {} : { lenient }),
      });
      return { success: true, data: rendered.request };
    }),
  },
];
