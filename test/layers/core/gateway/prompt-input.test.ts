/**
 * The prompt phase: a prompt call's body becomes the request it stands for, which readInput then
 * reads like any other (POST /v1/prompts/{id}/completions, a Responses request naming a Gantry
 * prompt, a realtime client secret with the workspace's policy). Prompts come from an in-memory
 * PromptSource (test/support/prompts.ts), the narrow contract this phase reads.
 */
import { describe, expect, it } from 'vitest';
import type { EndpointSpec } from '../../../../layers/core/src/gateway/endpoint.ts';
import { openRecord, type Flight } from '../../../../layers/core/src/gateway/flight.ts';
import { readInput } from '../../../../layers/core/src/gateway/input.ts';
import { handleGatewayRequest } from '../../../../layers/core/src/gateway/pipeline.ts';
import { REALTIME_SECRET_MAX_SECONDS, withPrompt } from '../../../../layers/core/src/gateway/prompt-input.ts';
import type { PromptCall } from '../../../../layers/core/src/gateway/endpoint.ts';
import type { PromptVersion } from '../../../../layers/core/src/prompts/contract.ts';
import { workspacePrincipal } from '../../../support/identity.ts';
import { PromptsDouble, promptVersion } from '../../../support/prompts.ts';
import { gatewayRequest, specOf, unitDeps, refusal } from '../../../support/unit-deps.ts';

const principal = workspacePrincipal();
const greeting = promptVersion({
  template: JSON.stringify([{ role: 'system', content: 'You are {{persona}}.' }]),
  model: 'gpt-4o-mini',
  parameters: { temperature: 0.2 },
});

const COMPLETIONS = specOf('POST', '/prompts/{promptId}/completions');
const RESPONSES = specOf('POST', '/responses');
const CLIENT_SECRETS = specOf('POST', '/realtime/client_secrets');

interface Rendered {
  f: Flight;
  body: Record<string, unknown>;
}

/** The prompt phase on one request, and the body readInput then reads. */
async function render(
  spec: EndpointSpec,
  call: PromptCall,
  path: string,
  body: unknown,
  opts: { headers?: Record<string, string>; versions?: PromptVersion[]; promptId?: string; prompts?: boolean } = {},
): Promise<Rendered> {
  const deps = unitDeps(opts.prompts === false ? {} : { prompts: new PromptsDouble(opts.versions ?? [greeting]) });
  const req = gatewayRequest(path, { body, headers: opts.headers ?? {} });
  const f = openRecord(spec, req, deps, undefined);
  f.record.principal = principal;
  const rendered = await withPrompt(f, req, { params: { promptId: opts.promptId ?? 'greeting' } }, principal, call);
  const input = await readInput(f, rendered, { params: { promptId: opts.promptId ?? 'greeting' } });
  return { f, body: input.body.kind === 'json' ? input.body.value : {} };
}

const completions = (body: unknown, opts: Parameters<typeof render>[4] = {}) => render(COMPLETIONS, 'completions', '/prompts/greeting/completions', body, opts);

describe('POST /v1/prompts/{promptId}/completions', () => {
  it("renders the prompt's messages with the variables, its model and parameters under the request's", async () => {
    const { f, body } = await completions({ variables: { persona: 'a pirate' }, max_tokens: 50, hyperparameters: { temperature: 0.9 }, stream: true });
    expect(body).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0.9,
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'system', content: 'You are a pirate.' }],
    });
    expect(f.record).toMatchObject({
      prompt: { id: 'pr-1', slug: 'greeting', version: 1 },
      model: 'gpt-4o-mini',
      stream: true,
      metadata: { _prompt: 'greeting' },
    });
  });

  it('refuses a call without variables, or with a lenient that is not a boolean, with 400 naming the field', async () => {
    expect(await refusal(completions({}))).toMatchObject({ status: 400, param: 'variables' });
    expect(await refusal(completions({ variables: { persona: 'x' }, lenient: 'yes' }))).toMatchObject({ status: 400, param: 'lenient' });
  });

  it('refuses a prompt the workspace does not have with 404 naming promptId', async () => {
    expect(await refusal(completions({ variables: {} }, { promptId: 'nope' }))).toMatchObject({ status: 404, param: 'promptId' });
  });

  it("routes by the prompt's provider only when the request names no route of its own", async () => {
    const routed = promptVersion({ template: 'Hi {{name}}', model: 'gpt-4o', provider: '@openai-prod' });
    const own = await completions({ variables: { name: 'Ada' } }, { versions: [routed] });
    expect(own.f.headers.get('x-gw-provider')).toBe('@openai-prod');
    expect(own.body.messages).toEqual([{ role: 'user', content: 'Hi Ada' }]);
    const named = await completions({ variables: { name: 'Ada' } }, { versions: [routed], headers: { 'x-gw-provider': 'groq' } });
    expect(named.f.headers.get('x-gw-provider')).toBe('groq');
  });

  it('reaches the provider as the rendered chat request through the whole pipeline', async () => {
    const deps = unitDeps({ prompts: new PromptsDouble([greeting]) });
    const req = gatewayRequest('/prompts/greeting/completions', { body: { variables: { persona: 'terse' } }, headers: { 'x-gw-provider': 'openai' } });
    const res = await handleGatewayRequest(COMPLETIONS, req, deps, undefined, { params: { promptId: 'greeting' } });
    expect(res.status).toBe(200);
    expect(deps.upstream.sent[0]?.url.pathname).toBe('/v1/chat/completions');
    expect(deps.upstream.sent[0]?.json).toEqual({ model: 'gpt-4o-mini', temperature: 0.2, messages: [{ role: 'system', content: 'You are terse.' }] });
  });
});

describe('POST /v1/responses with a prompt', () => {
  const responses = (body: unknown, opts: Parameters<typeof render>[4] = {}) => render(RESPONSES, 'responses', '/responses', body, opts);

  it("puts a Gantry prompt's messages first in input, the request's own input after them", async () => {
    const { f, body } = await responses({ prompt: { id: 'greeting', variables: { persona: 'kind' } }, input: 'Hello' });
    expect(body).toEqual({
      model: 'gpt-4o-mini',
      temperature: 0.2,
      input: [
        { role: 'system', content: 'You are kind.' },
        { role: 'user', content: 'Hello' },
      ],
    });
    expect(f.record.prompt?.slug).toBe('greeting');
  });

  it("leaves a provider's own hosted prompt (an id Gantry does not know) as the client sent it", async () => {
    const sent = { model: 'gpt-4o', prompt: { id: 'pmpt_abc', version: '2' }, input: 'Hello' };
    const { f, body } = await responses(sent);
    expect(body).toEqual(sent);
    expect(f.record.prompt).toBeUndefined();
    // Without a prompt source at all, the same.
    expect((await responses(sent, { prompts: false })).body).toEqual(sent);
  });

  it('refuses a prompt without an id, or a version that is not a string, with 400 naming the field', async () => {
    expect(await refusal(responses({ prompt: { variables: {} }, input: 'x' }))).toMatchObject({ status: 400, param: 'prompt.id' });
    expect(await refusal(responses({ prompt: { id: 'greeting', version: 2 }, input: 'x' }))).toMatchObject({ status: 400, param: 'prompt.version' });
    expect(await refusal(responses({ prompt: { id: 'greeting', variables: [] }, input: 'x' }))).toMatchObject({ status: 400, param: 'prompt.variables' });
  });
});

describe('POST /v1/realtime/client_secrets', () => {
  const secrets = (body: unknown, opts: Parameters<typeof render>[4] = {}) => render(CLIENT_SECRETS, 'realtime', '/realtime/client_secrets', body, opts);
  const session = { type: 'realtime', model: 'gpt-realtime' };

  it("caps the secret's life, filling the cap when the request names none", async () => {
    expect((await secrets({ session })).body.expires_after).toEqual({ anchor: 'created_at', seconds: REALTIME_SECRET_MAX_SECONDS });
    const longer = await refusal(secrets({ session, expires_after: { anchor: 'created_at', seconds: REALTIME_SECRET_MAX_SECONDS + 1 } }));
    expect(longer).toMatchObject({ status: 400, param: 'expires_after.seconds' });
  });

  it("renders a prompt into the session's instructions, before the client's own", async () => {
    const { body } = await secrets({ session: { ...session, instructions: 'Speak slowly.' }, prompt_id: 'greeting', prompt_variables: { persona: 'a guide' } });
    expect(body.session).toMatchObject({ instructions: 'You are a guide.\n\nSpeak slowly.', model: 'gpt-realtime' });
    expect(body).not.toHaveProperty('prompt_id');
  });

  it('refuses a prompt the workspace does not have with 400 naming prompt_id', async () => {
    expect(await refusal(secrets({ session, prompt_id: 'nope' }))).toMatchObject({ status: 400, param: 'prompt_id' });
  });
});
