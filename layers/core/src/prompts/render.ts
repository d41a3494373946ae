/**
 * A prompt version rendered into the request it stands for. Shared by the render route (admin),
 * the gateway's `/v1/prompts/{id}/completions` and the Responses API's `prompt`.
 *
 * What a template holds:
 * - a JSON list of messages (`[{"role": "system", "content": "You are {{persona}}"}, ...]`): every
 *   string in it is a template, rendered without escaping, so the structure stays valid JSON
 *   whatever the values hold;
 * - any other text: one user message with the rendered text;
 * - a raw template (`is_raw_template`): the rendered text is the JSON body itself; values land
 *   JSON-escaped (inside strings), `{{{name}}}` inserts JSON as it is.
 * The version's parameters go under the request's hyperparameters; the request's `messages` follow
 * the template's (a conversation so far). Versions are immutable, so each is compiled once.
 * A render has limits (PROMPT_RENDER_LIMITS), checked before any text is written.
 */
import { GantryError, NotFoundError, ServiceUnavailableError, ValidationError, type FieldProblem } from '../http/errors.ts';
import { tryParseJson } from '../http/json.ts';
import type { Principal } from '../kernel/principal.ts';
import { BoundedMap } from './bounded-map.ts';
import type { PromptSource, PromptVersion } from './contract.ts';
import { compileTemplate, partialsOf, renderTemplates, TemplateLimitError, type CompiledTemplate, type RenderedTexts, type RenderLimits } from './template.ts';

export interface RenderInput {
  variables: Record<string, unknown>;
  hyperparameters: Record<string, unknown>;
  /** Per request: missing names render empty (the prompt's own `lenient` applies too). */
  lenient?: boolean;
}

export interface RenderedPrompt {
  version: PromptVersion;
  /** The chat request (or, raw, the body the template renders to). */
  request: Record<string, unknown>;
}

/** 422: the template needs values the request did not give; every missing name is listed. */
export class TemplateValuesError extends GantryError {
  constructor(problems: FieldProblem[]) {
    super(422, 'AB01', 'invalid_request_error', `The prompt cannot be rendered: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, {
      param: problems[0]?.path ?? null,
      openaiCode: 'prompt_render_failed',
      problems,
    });
  }
}

/**
 * What one render may do (docs/prompts.md, "Limits"): write `textAllowance` characters more than
 * its variables hold (their JSON), so a template never turns a small request into a large one;
 * include partials `maxPartials` times; take `maxSteps` steps. Measured before anything is written.
 */
export const PROMPT_RENDER_LIMITS = { textAllowance: 1 << 20, maxPartials: 1_000, maxSteps: 500_000 } as const;

const limitsFor = (variables: Record<string, unknown>): RenderLimits => ({
  maxChars: PROMPT_RENDER_LIMITS.textAllowance + JSON.stringify(variables).length,
  maxPartials: PROMPT_RENDER_LIMITS.maxPartials,
  maxSteps: PROMPT_RENDER_LIMITS.maxSteps,
});

const LIMIT_PROBLEMS: Record<Exclude<TemplateLimitError['kind'], 'cycle'>, (limit: number) => FieldProblem> = {
  maxChars: (limit) => ({
    path: 'string',
    message: `would render more than ${limit.toLocaleString('en')} characters (the limit: 1 MiB more than the request's variables)`,
  }),
  maxPartials: (limit) => ({ path: 'partials', message: `would include partials more than ${limit.toLocaleString('en')} times (the limit of one render)` }),
  maxSteps: (limit) => ({
    path: 'string',
    message: `would take more than ${limit.toLocaleString('en')} steps (the limit of one render: every tag and text each time it is rendered, a section once per item)`,
  }),
};

/** 422: the prompt would render past a limit; names the prompt, its version and the limit. */
export class PromptLimitError extends GantryError {
  constructor(version: PromptVersion, problem: FieldProblem) {
    super(
      422,
      'AB01',
      'invalid_request_error',
      `The prompt ${JSON.stringify(version.slug)} (version ${version.version}) cannot be rendered: it ${problem.message}`,
      {
        param: problem.path,
        openaiCode: 'prompt_render_failed',
        problems: [problem],
      },
    );
  }
}

/** A string of a JSON template that holds tags (a class, so no JSON object can pass for one). */
class Leaf {
  readonly template: CompiledTemplate;
  constructor(template: CompiledTemplate) {
    this.template = template;
  }
}

/** A compiled JSON template: literals as they are, strings with tags as leaves. */
type Node = Leaf | string | number | boolean | null | Node[] | { [key: string]: Node };

type Compiled =
  | { kind: 'raw' | 'text'; template: CompiledTemplate; partials: readonly string[] }
  | { kind: 'messages'; tree: Node; partials: readonly string[] };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Warm versions compiled; partial names per partial version. */
const MAX_COMPILED = 1000;
/** Partials nested in partials, all loaded before a render; beyond this the template is refused. */
const MAX_PARTIALS = 50;

export class PromptRenderer {
  readonly #source: PromptSource;
  readonly #compiled = new BoundedMap<string, Compiled>(MAX_COMPILED);
  readonly #partialNames = new BoundedMap<string, readonly string[]>(MAX_COMPILED);

  constructor(source: PromptSource) {
    this.#source = source;
  }

  /** Loads the version the reference names (404 when none) and renders it. */
  async render(principal: Principal, ref: string, input: RenderInput): Promise<RenderedPrompt> {
    const version = await this.#source.prompt(principal, ref);
    if (!version) throw new NotFoundError(`No prompt ${JSON.stringify(ref)} in this workspace`, { param: 'promptId' });
    return { version, request: await this.renderVersion(principal, version, input) };
  }

  async renderVersion(principal: Principal, version: PromptVersion, input: RenderInput): Promise<Record<string, unknown>> {
    const compiled = this.#compile(version);
    const lenient = version.lenient || input.lenient === true;
    const { partials, missing } = await this.#loadPartials(principal, compiled.partials);
    const misses: FieldProblem[] = missing.map((name) => ({ path: `partials.${name}`, message: 'is not a prompt partial in this workspace' }));
    const rendered = await renderCompiled(version, compiled, { variables: input.variables, partials, misses });
    if (misses.length && !lenient) throw new TemplateValuesError(misses);
    return buildRequest(version, rendered, input.hyperparameters);
  }

  #compile(version: PromptVersion): Compiled {
    let compiled = this.#compiled.get(version.versionId);
    if (!compiled) {
      compiled = unrenderable(() => compilePrompt(version));
      this.#compiled.set(version.versionId, compiled);
    }
    return compiled;
  }

  /** Every partial the template reaches, level by level (each level's lookups at once). */
  async #loadPartials(principal: Principal, names: readonly string[]): Promise<{ partials: Map<string, string>; missing: string[] }> {
    const partials = new Map<string, string>();
    const missing: string[] = [];
    let level = [...new Set(names)];
    while (level.length) {
      const found = await Promise.all(level.map((name) => this.#source.partial(principal, name)));
      const next: string[] = [];
      level.forEach((name, i) => {
        const p = found[i];
        if (!p) return void missing.push(name);
        partials.set(name, p.content);
        let nested = this.#partialNames.get(p.versionId);
        if (!nested) this.#partialNames.set(p.versionId, (nested = unrenderable(() => partialsOf(p.content, `partials.${name}`))));
        for (const n of nested) if (!partials.has(n) && !missing.includes(n) && !next.includes(n)) next.push(n);
      });
      if (partials.size + next.length > MAX_PARTIALS) throw ValidationError.field('string', `uses more than ${MAX_PARTIALS} partials`);
      level = next;
    }
    return { partials, missing };
  }
}

/** A stored template that does not parse is no fault of the call: 422, naming where it is. */
function unrenderable<T>(compile: () => T): T {
  try {
    return compile();
  } catch (err) {
    if (err instanceof ValidationError) throw new TemplateValuesError(err.problems);
    throw err;
  }
}

/** One renderer per prompt source, so that its compiled versions stay warm across requests. */
const renderers = new WeakMap<PromptSource, PromptRenderer>();

export function rendererOf(source: PromptSource | undefined): PromptRenderer {
  if (!source) throw new ServiceUnavailableError('Prompts are not available on this deployment');
  let r = renderers.get(source);
  if (!r) renderers.set(source, (r = new PromptRenderer(source)));
  return r;
}

function compilePrompt(version: PromptVersion): Compiled {
  if (version.isRawTemplate) {
    const template = compileTemplate(version.template);
    return { kind: 'raw', template, partials: template.partials };
  }
  const parsed = tryParseJson(version.template);
  if (parsed.ok && Array.isArray(parsed.value)) {
    const partials = new Set<string>();
    const tree = compileNode(parsed.value, 'string', partials);
    return { kind: 'messages', tree, partials: [...partials] };
  }
  const template = compileTemplate(version.template);
  return { kind: 'text', template, partials: template.partials };
}

function compileNode(value: unknown, path: string, partials: Set<string>): Node {
  if (typeof value === 'string') {
    if (!value.includes('{{')) return value;
    const t = compileTemplate(value, path);
    for (const p of t.partials) partials.add(p);
    return new Leaf(t);
  }
  if (Array.isArray(value)) return value.map((v, i) => compileNode(v, `${path}[${i}]`, partials));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, compileNode(v, `${path}.${k}`, partials)]));
  return value as Node;
}

type Rendered = { kind: 'raw' | 'text'; text: string } | { kind: 'messages'; value: unknown };

/** One render: its values, its loaded partials, and the misses it met (as `variables.<name>`). */
interface Run {
  variables: Record<string, unknown>;
  partials: ReadonlyMap<string, string>;
  misses: FieldProblem[];
}

async function renderCompiled(version: PromptVersion, c: Compiled, run: Run): Promise<Rendered> {
  const templates = c.kind === 'messages' ? leavesOf(c.tree, []) : [c.template];
  let out: RenderedTexts;
  try {
    out = await renderTemplates(templates, run.variables, {
      escape: c.kind === 'raw' ? 'json' : 'none',
      partials: run.partials,
      limits: limitsFor(run.variables),
    });
  } catch (err) {
    if (!(err instanceof TemplateLimitError)) throw err instanceof ValidationError ? new TemplateValuesError(err.problems) : err;
    // A partial that includes itself where nothing the data gives can end it.
    if (err.kind === 'cycle') throw new TemplateValuesError([{ path: 'partials', message: 'include each other without end' }]);
    throw new PromptLimitError(version, LIMIT_PROBLEMS[err.kind](err.limit));
  }
  for (const name of out.missingVariables) run.misses.push({ path: `variables.${name}`, message: 'is missing' });
  if (c.kind !== 'messages') return { kind: c.kind, text: out.texts[0] ?? '' };
  const texts = out.texts.values();
  return { kind: 'messages', value: fill(c.tree, () => texts.next().value ?? '') };
}

/** The templates of a message list, in the order `fill` meets them. */
function leavesOf(node: Node, into: CompiledTemplate[]): CompiledTemplate[] {
  if (node instanceof Leaf) into.push(node.template);
  else if (Array.isArray(node)) for (const n of node) leavesOf(n, into);
  else if (isRecord(node)) for (const v of Object.values(node)) leavesOf(v as Node, into);
  return into;
}

/** The message list with each template replaced by its text. */
function fill(node: Node, next: () => string): unknown {
  if (node instanceof Leaf) return next();
  if (Array.isArray(node)) return node.map((n) => fill(n, next));
  if (isRecord(node)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node)) out[k] = fill(v as Node, next);
    return out;
  }
  return node;
}

/** The request: version parameters, then the template's own fields, then the hyperparameters. */
function buildRequest(version: PromptVersion, rendered: Rendered, hyper: Record<string, unknown>): Record<string, unknown> {
  const fromVersion: Record<string, unknown> = { ...version.parameters };
  if (version.model !== null) fromVersion.model = version.model;
  if (version.tools !== null) fromVersion.tools = version.tools;
  if (version.functions !== null) fromVersion.functions = version.functions;
  if (version.toolChoice !== null && version.toolChoice !== undefined) fromVersion.tool_choice = version.toolChoice;
  let own: Record<string, unknown>;
  if (rendered.kind === 'raw') {
    const parsed = tryParseJson(rendered.text);
    if (!parsed.ok || !isRecord(parsed.value)) {
      throw new TemplateValuesError([{ path: 'string', message: 'is a raw template whose rendered text is not a JSON object' }]);
    }
    own = parsed.value;
  } else {
    own = { messages: rendered.kind === 'messages' ? rendered.value : [{ role: 'user', content: rendered.text }] };
  }
  const { messages: extra, ...rest } = hyper;
  const request = { ...fromVersion, ...own, ...rest };
  if (Array.isArray(extra) && Array.isArray(request.messages)) request.messages = [...(request.messages as unknown[]), ...extra];
  else if (extra !== undefined) request.messages = extra;
  return request;
}
