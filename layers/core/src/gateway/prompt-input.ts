/**
 * The prompt phase: before `readInput`, a prompt call's body becomes the request it stands for,
 * which then goes through the pipeline like any other (validation, routing, limits, guardrails,
 * cache, logs). Two routes use it:
 * - `POST /v1/prompts/{promptId}/completions`: `{variables, stream, hyperparameters, ...}` (the
 *   hyperparameters nested or at the root) becomes a chat request;
 * - `POST /v1/responses` with OpenAI's `prompt: {id, version, variables}`: when the id names a
 *   Gantry prompt, its messages become the start of `input`; otherwise the body goes on untouched
 *   (a provider's own hosted prompt).
 * - `POST /v1/realtime/client_secrets` and `/v1/realtime/sessions`: the workspace's policy on a
 *   minted secret: a Gantry prompt (`prompt_id` or `x-gw-prompt`, `prompt_variables`) rendered
 *   into the session's `instructions`, and a cap on the secret's life (`expires_after.seconds`).
 * The prompt's provider routes the request when the request names none (no config, provider or
 * virtual key header, no key-pinned config); the log carries the prompt's id and version and
 * `_prompt` (its slug) in the metadata.
 */
import { requestWithBody } from '../http/bodies.ts';
import { ValidationError } from '../http/errors.ts';
import { isRecord } from '../http/json.ts';
import type { Principal } from '../kernel/principal.ts';
import type { PromptVersion } from '../prompts/contract.ts';
import { rendererOf, type RenderInput } from '../prompts/render.ts';
import type { PromptCall } from './endpoint.ts';
import type { Flight } from './flight.ts';
import type { RouteMatch } from './input.ts';
import { readRequestBody } from './request-body.ts';

/** Which kind of prompt call a route takes. */

const ROUTING_HEADERS = ['x-gw-config', 'x-gw-provider', 'x-gw-custom-host', 'x-gw-virtual-key'];

/** The request to read in the prompt's place (the original when the body uses no Gantry prompt). */
export async function withPrompt(f: Flight, req: Request, route: RouteMatch, principal: Principal, call: PromptCall): Promise<Request> {
  // Without prompts a Responses body is read once, by readInput, as on any route.
  if (call === 'responses' && !f.deps.prompts) return req;
  const read = await readRequestBody('json', req, false, f.spec.maxBodyBytes);
  const body = read.body.kind === 'json' ? read.body.value : {};
  if (call === 'realtime') return withText(req, JSON.stringify(await realtimeSecret(f, principal, body)));
  const rendered = call === 'completions' ? await completions(f, principal, route, body) : await responses(f, principal, body);
  if (!rendered) {
    f.body = read;
    return req;
  }
  notePrompt(f, principal, rendered.version);
  return withText(req, JSON.stringify(rendered.request));
}

/** The request again with a body held in memory, so readInput takes it without a trip through a stream. */
const withText = (req: Request, text: string): Request => requestWithBody(req.url, { method: req.method, headers: req.headers }, Buffer.from(text));

interface Rendered {
  version: PromptVersion;
  request: Record<string, unknown>;
}

function objectField(body: Record<string, unknown>, name: string, required: boolean): Record<string, unknown> {
  const value = body[name];
  if (value === undefined && !required) return {};
  if (!isRecord(value)) throw ValidationError.field(name, required ? 'is required and must be an object' : 'must be an object');
  return value;
}

async function completions(f: Flight, principal: Principal, route: RouteMatch, body: Record<string, unknown>): Promise<Rendered> {
  const { variables, hyperparameters, lenient, stream, ...root } = body;
  if (lenient !== undefined && typeof lenient !== 'boolean') throw ValidationError.field('lenient', 'must be a boolean');
  const input: RenderInput = {
    variables: objectField(body, 'variables', true),
    hyperparameters: { ...root, ...objectField(body, 'hyperparameters', false) },
    ...(lenient === undefined ? {} : { lenient }),
  };
  const rendered = await rendererOf(f.deps.prompts).render(principal, route.params?.promptId ?? '', input);
  return { version: rendered.version, request: stream === undefined ? rendered.request : { ...rendered.request, stream } };
}

/** OpenAI's `prompt` object on a Responses request, when it names a Gantry prompt. */
async function responses(f: Flight, principal: Principal, body: Record<string, unknown>): Promise<Rendered | undefined> {
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null || !f.deps.prompts) return undefined;
  if (!isRecord(prompt) || typeof prompt.id !== 'string' || prompt.id === '') throw ValidationError.field('prompt.id', 'is required and must be a string');
  const version = prompt.version;
  if (version !== undefined && version !== null && typeof version !== 'string') throw ValidationError.field('prompt.version', 'must be a string');
  const ref = version ? `${prompt.id}@${version}` : prompt.id;
  const found = await f.deps.prompts.prompt(principal, ref);
  if (!found) return undefined;
  const variables = prompt.variables === undefined ? {} : prompt.variables;
  if (!isRecord(variables)) throw ValidationError.field('prompt.variables', 'must be an object');
  const chat = await rendererOf(f.deps.prompts).renderVersion(principal, found, { variables, hyperparameters: {} });
  return { version: found, request: toResponsesRequest(chat, body) };
}

/** A rendered chat request as the start of a Responses request: its messages first in `input`. */
function toResponsesRequest(chat: Record<string, unknown>, body: Record<string, unknown>): Record<string, unknown> {
  const { prompt: _prompt, input, ...rest } = body;
  const messages = Array.isArray(chat.messages) ? chat.messages.map(toInputItem) : [];
  const own = input === undefined ? [] : typeof input === 'string' ? [{ role: 'user', content: input }] : (input as unknown[]);
  const out: Record<string, unknown> = { ...rest, input: [...messages, ...own] };
  if (out.model === undefined && chat.model !== undefined) out.model = chat.model;
  for (const name of ['temperature', 'top_p'] as const) if (out[name] === undefined && chat[name] !== undefined) out[name] = chat[name];
  const maxTokens = chat.max_completion_tokens ?? chat.max_tokens;
  if (out.max_output_tokens === undefined && maxTokens !== undefined) out.max_output_tokens = maxTokens;
  return out;
}

/** A chat message as a Responses input item (text and image parts in the Responses names). */
function toInputItem(message: unknown): unknown {
  if (!isRecord(message) || !Array.isArray(message.content)) return message;
  const content = message.content.map((part: unknown) => {
    if (!isRecord(part)) return part;
    if (part.type === 'text') return { type: 'input_text', text: part.text };
    if (part.type === 'image_url' && isRecord(part.image_url)) return { type: 'input_image', image_url: part.image_url.url };
    return part;
  });
  return { ...message, content };
}

/** The prompt in the record (log and metadata) and, when the request names no route, its provider. */
function notePrompt(f: Flight, principal: Principal, version: PromptVersion): void {
  f.record.prompt = { id: version.promptId, slug: version.slug, versionId: version.versionId, version: version.version };
  const provider = version.provider;
  if (!provider || principal.defaults?.config_id || ROUTING_HEADERS.some((h) => f.headers.get(h)?.trim())) return;
  f.headers = new Headers(f.headers);
  f.headers.set(provider.startsWith('@') ? 'x-gw-provider' : 'x-gw-virtual-key', provider);
}

/** The longest life a realtime client secret may ask for; OpenAI's own default, and filled in when the request names none. */
export const REALTIME_SECRET_MAX_SECONDS = 600;

/**
 * A realtime client secret or session request with the workspace's policy applied: the prompt's
 * system and developer messages become the session's `instructions` (before the client's own),
 * the prompt's model is used when the request names none, and the secret's life is capped.
 * Anything not an object is left for validation to refuse.
 */
async function realtimeSecret(f: Flight, principal: Principal, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const secrets = f.spec.endpoint === 'createRealtimeClientSecret';
  const { prompt_id: promptId, prompt_variables: variables, ...rest } = body;
  if (secrets) capSecretLife(rest);
  const ref = f.headers.get('x-gw-prompt')?.trim() || promptId;
  if (ref === undefined || ref === null) return rest;
  if (typeof ref !== 'string' || ref === '') throw ValidationError.field('prompt_id', 'must be a prompt id or slug (slug@version, slug@label)');
  if (variables !== undefined && !isRecord(variables)) throw ValidationError.field('prompt_variables', 'must be an object');
  const version = f.deps.prompts ? await f.deps.prompts.prompt(principal, ref) : undefined;
  if (!version) throw ValidationError.field('prompt_id', `names no prompt in this workspace (${JSON.stringify(ref)})`);
  const chat = await rendererOf(f.deps.prompts).renderVersion(principal, version, { variables: variables ?? {}, hyperparameters: {} });
  notePrompt(f, principal, version);
  const session = secrets ? (isRecord(rest.session) ? { ...rest.session } : undefined) : rest;
  if (!session) return rest;
  const instructions = [instructionsOf(chat.messages), session.instructions].filter((t) => typeof t === 'string' && t !== '').join('\n\n');
  if (instructions) session.instructions = instructions;
  if (session.model === undefined && version.model) session.model = version.model;
  return secrets ? { ...rest, session } : session;
}

/** `expires_after.seconds` at most the cap; the cap itself when the request names none. */
function capSecretLife(body: Record<string, unknown>): void {
  const after = body.expires_after;
  if (after !== undefined && !isRecord(after)) return;
  const seconds = after?.seconds;
  if (typeof seconds === 'number' && seconds > REALTIME_SECRET_MAX_SECONDS) {
    throw ValidationError.field(
      'expires_after.seconds',
      `must be at most ${REALTIME_SECRET_MAX_SECONDS} in this gateway (a realtime client secret's longest life)`,
    );
  }
  if (seconds === undefined) body.expires_after = { anchor: 'created_at', ...after, seconds: REALTIME_SECRET_MAX_SECONDS };
}

/** The text of a rendered prompt's system and developer messages (all its messages when it has none). */
function instructionsOf(messages: unknown): string {
  const all = Array.isArray(messages) ? messages.filter(isRecord) : [];
  const system = all.filter((m) => m.role === 'system' || m.role === 'developer');
  const text = (m: Record<string, unknown>) =>
    typeof m.content === 'string'
      ? m.content
      : Array.isArray(m.content)
        ? m.content.map((p: unknown) => (isRecord(p) && typeof p.text === 'string' ? p.text : '')).join('')
        : '';
  return (system.length ? system : all).map(text).filter(Boolean).join('\n\n');
}
