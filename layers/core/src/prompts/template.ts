/**
 * The Mustache engine prompts render with: the `mustache` package's parser and writer, with a
 * lookup of our own so that a render knows every variable and partial it could not find. Strict by
 * default (the caller turns the misses into a 422 that lists them all); lenient leaves them empty,
 * as Mustache itself does. Sections and inverted sections over a missing name are simply false:
 * `{{^name}}default{{/name}}` is how a template says a value is optional.
 *
 * Escaping is the caller's choice: `html` is Mustache's own (the specification's vectors),
 * `none` for prompt text (a prompt is no HTML page: `&` must stay `&`), `json` for raw templates
 * whose rendered text is a JSON body (a value lands inside a JSON string, quotes escaped).
 * `{{{name}}}` and `{{& name}}` are never escaped.
 *
 * Rendering is ours, over mustache's tokens, with limits (issue 29): partials that include each
 * other a few times each, or a partial in a section over a long list, would otherwise render
 * hundreds of megabytes from a few kilobytes. A render is first measured: the same walk counting
 * characters, partial inclusions and steps instead of writing, where a partial rendered again in
 * the same context costs what it cost the first time (so repeated inclusion multiplies, without
 * being expanded). Only a render within every limit is then written. Both walks keep their own
 * stack (no recursion) and hand the event loop back every few milliseconds.
 */
import Mustache from 'mustache';
import { ValidationError } from '../http/errors.ts';
import { BoundedMap } from './bounded-map.ts';

export type EscapeMode = 'none' | 'html' | 'json';

/** The most one render may do (render.ts sets them per prompt; docs/prompts.md, "Limits"). */
export interface RenderLimits {
  /** Characters of rendered text, every template of the render together. */
  maxChars: number;
  /** Partial inclusions, each time one is rendered (a partial in a section over 10 items: 10). */
  maxPartials: number;
  /** Steps: every tag and piece of text each time it is rendered, every pass of a section. */
  maxSteps: number;
}

export const DEFAULT_RENDER_LIMITS: Readonly<RenderLimits> = { maxChars: 1 << 20, maxPartials: 1_000, maxSteps: 500_000 };

/** Misses always render empty; whether they are an error is the caller's call (strict or lenient). */
export interface RenderOptions {
  escape: EscapeMode;
  /** Partial templates by the name the template uses (`footer`, `footer@2`), already loaded. */
  partials?: ReadonlyMap<string, string>;
  /** Default: DEFAULT_RENDER_LIMITS. */
  limits?: RenderLimits;
}

export interface Rendered {
  text: string;
  /** Variables no context had (in the order met, each once). */
  missingVariables: string[];
  /** Partials not in `partials`. */
  missingPartials: string[];
}

/** A parsed template: its tokens, and the partials it names (to load them before rendering). */
export interface CompiledTemplate {
  readonly source: string;
  readonly tokens: string[][];
  readonly partials: readonly string[];
}

/** Which limit a render would pass (`cycle`: a partial that includes itself in the same context, without end). */
export type LimitKind = keyof RenderLimits | 'cycle';

/** A render refused before it was written: the limit, and its value. */
export class TemplateLimitError extends Error {
  readonly kind: LimitKind;
  readonly limit: number;
  constructor(kind: LimitKind, limit: number) {
    super(`The render would pass its limit ${kind} (${limit})`);
    this.kind = kind;
    this.limit = limit;
  }
}

type Token = string[];

interface RenderState {
  missingVariables: Set<string>;
  missingPartials: Set<string>;
  escape: (value: unknown) => string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * The context stack. The specification's name resolution: the first part of a dotted name is
 * looked up through the stack, the rest only inside what it found (mustache.js would also try outer
 * contexts). Undefined means not found; JSON variables never hold undefined, so a found `null`
 * renders empty.
 */
class RenderContext {
  readonly view: unknown;
  readonly parent: RenderContext | undefined;

  constructor(view: unknown, parent?: RenderContext) {
    this.view = view;
    this.parent = parent;
  }

  push(view: unknown): RenderContext {
    return new RenderContext(view, this);
  }

  lookup(name: string): unknown {
    if (name === '.') return this.view;
    const [head = '', ...rest] = name.split('.');
    for (let c: RenderContext | undefined = this; c; c = c.parent) {
      if (!isObject(c.view) || !Object.hasOwn(c.view, head)) continue;
      let value: unknown = c.view[head];
      for (const part of rest) {
        if (!isObject(value) || !Object.hasOwn(value, part)) return undefined;
        value = value[part];
      }
      return value;
    }
    return undefined;
  }
}

/** Text of an interpolated value: objects and arrays as JSON (never `[object Object]`). */
const textOf = (value: unknown): string => (isObject(value) ? JSON.stringify(value) : String(value));

const ESCAPES: Record<EscapeMode, (value: unknown) => string> = {
  none: textOf,
  html: (value) => (typeof value === 'number' ? String(value) : Mustache.escape(textOf(value))),
  // Inside a JSON string: JSON.stringify's escaping without its quotes.
  json: (value) => JSON.stringify(textOf(value)).slice(1, -1),
};

/** mustache's parser; partial texts are parsed once each while warm, within a bound. */
const writer = new Mustache.Writer();
(writer as { templateCache?: Mustache.TemplateCache }).templateCache = new BoundedMap<string, string>(500);

/** Parses a template; a syntax error (an unclosed section, say) is a 400 naming `field`. */
export function compileTemplate(source: string, field = 'string'): CompiledTemplate {
  let tokens: Token[];
  try {
    tokens = writer.parse(source) as Token[];
  } catch (err) {
    throw ValidationError.field(field, `is not a valid Mustache template: ${(err as Error).message}`);
  }
  const partials = new Set<string>();
  collectPartials(tokens, partials);
  return { source, tokens, partials: [...partials] };
}

/** Partial names anywhere in the tokens (sections nest their tokens at index 4). */
function collectPartials(tokens: readonly Token[], into: Set<string>): void {
  for (const token of tokens) {
    if (token[0] === '>') into.add(token[1] as string);
    const nested = (token as unknown[])[4];
    if ((token[0] === '#' || token[0] === '^') && Array.isArray(nested)) collectPartials(nested as Token[], into);
  }
}

/** The partial names a partial's own text uses (partials may nest). */
export const partialsOf = (source: string, field = 'partial'): readonly string[] => compileTemplate(source, field).partials;

interface Totals {
  chars: number;
  partials: number;
  steps: number;
}

const LIMIT_OF = { chars: 'maxChars', partials: 'maxPartials', steps: 'maxSteps' } as const satisfies Record<keyof Totals, keyof RenderLimits>;

/** One list of tokens being rendered: where in it, in which context; a section over a list walks it once per item. */
interface Frame {
  tokens: readonly Token[];
  at: number;
  ctx: RenderContext;
  list?: { items: readonly unknown[]; item: number; base: RenderContext };
  /** Measuring a partial: the totals when it began, to remember what it cost in this context. */
  cost?: { key: string; start: Totals };
}

/** The same walk measures (counts, remembers what each partial costs per context) or writes. */
class Walk {
  readonly totals: Totals = { chars: 0, partials: 0, steps: 0 };
  readonly state: RenderState;
  text = '';
  readonly #measure: boolean;
  readonly #limits: RenderLimits;
  readonly #partials: ReadonlyMap<string, string> | undefined;
  readonly #stack: Frame[] = [];
  /** Partial tokens by name and indentation (a standalone partial is indented as its tag). */
  readonly #parsed = new Map<string, readonly Token[]>();
  /** Measuring: what a partial costs in a context; `open` while it is being measured there. */
  readonly #costs = new Map<RenderContext, Map<string, Totals | 'open'>>();

  constructor(measure: boolean, opts: RenderOptions) {
    this.#measure = measure;
    this.#limits = opts.limits ?? DEFAULT_RENDER_LIMITS;
    this.#partials = opts.partials;
    this.state = { missingVariables: new Set(), missingPartials: new Set(), escape: ESCAPES[opts.escape] };
  }

  begin(tokens: readonly Token[], ctx: RenderContext): void {
    this.text = '';
    this.#enter({ tokens, at: 0, ctx });
  }

  /** Walks until done (true) or until `deadline` (performance.now()) has passed. */
  run(deadline: number): boolean {
    const stack = this.#stack;
    for (let n = 1; stack.length; n++) {
      if ((n & 1023) === 0 && performance.now() > deadline) return false;
      const f = stack[stack.length - 1] as Frame;
      if (f.at === f.tokens.length) {
        this.#end(f);
        continue;
      }
      const token = f.tokens[f.at++] as Token;
      this.#count('steps', 1);
      const kind = token[0];
      if (kind === 'text') this.#write(token[1] as string);
      else if (kind === 'name' || kind === '&') this.#value(token[1] as string, f.ctx, kind === 'name');
      else if (kind === '#') this.#section(token, f.ctx);
      else if (kind === '^') this.#inverted(token, f.ctx);
      else if (kind === '>') this.#partial(token, f.ctx);
      // '!' (comments) and '=' (delimiter changes, applied by the parser) write nothing.
    }
    return true;
  }

  #count(kind: keyof Totals, n: number): void {
    if ((this.totals[kind] += n) > this.#limits[LIMIT_OF[kind]]) throw new TemplateLimitError(LIMIT_OF[kind], this.#limits[LIMIT_OF[kind]]);
  }

  #write(text: string): void {
    this.#count('chars', text.length);
    if (!this.#measure) this.text += text;
  }

  #enter(frame: Frame): void {
    this.#count('steps', 1);
    this.#stack.push(frame);
  }

  /** The end of a frame's tokens: the next item of its list, or back to the frame below. */
  #end(f: Frame): void {
    const list = f.list;
    if (list && ++list.item < list.items.length) {
      this.#count('steps', 1);
      f.at = 0;
      f.ctx = list.base.push(list.items[list.item]);
      return;
    }
    this.#stack.pop();
    if (f.cost) this.#costs.get(f.ctx)?.set(f.cost.key, delta(this.totals, f.cost.start));
  }

  #value(name: string, ctx: RenderContext, escaped: boolean): void {
    const value = ctx.lookup(name);
    if (value === undefined) this.state.missingVariables.add(name);
    if (value === undefined || value === null) return;
    this.#write(escaped ? this.state.escape(value) : textOf(value));
  }

  /** mustache.js's sections: falsy skips; a list once per item; an object, string or number pushed; true as is. */
  #section(token: Token, ctx: RenderContext): void {
    const value = ctx.lookup(token[1] as string);
    if (!value) return;
    const tokens = (token as unknown[])[4] as Token[];
    if (Array.isArray(value)) {
      if (value.length) this.#enter({ tokens, at: 0, ctx: ctx.push(value[0]), list: { items: value, item: 0, base: ctx } });
    } else if (typeof value === 'object' || typeof value === 'string' || typeof value === 'number') {
      this.#enter({ tokens, at: 0, ctx: ctx.push(value) });
    } else {
      this.#enter({ tokens, at: 0, ctx });
    }
  }

  #inverted(token: Token, ctx: RenderContext): void {
    const value = ctx.lookup(token[1] as string);
    if (!value || (Array.isArray(value) && value.length === 0)) this.#enter({ tokens: (token as unknown[])[4] as Token[], at: 0, ctx });
  }

  #partial(token: Token, ctx: RenderContext): void {
    const name = token[1] as string;
    const source = this.#partials?.get(name);
    if (source === undefined) return void this.state.missingPartials.add(name);
    this.#count('partials', 1);
    // mustache.js indents a standalone partial (its tag first on its line) as the tag is.
    const [, , , , indent, tagIndex, lineHasNonSpace] = token as unknown[];
    const indentation = tagIndex === 0 && typeof indent === 'string' ? indent : '';
    const key = `${name}\n${indentation}\n${lineHasNonSpace ? 1 : 0}`;
    const tokens = this.#tokensOf(key, name, source, indentation, Boolean(lineHasNonSpace));
    if (!this.#measure) return this.#enter({ tokens, at: 0, ctx });
    let costs = this.#costs.get(ctx);
    if (!costs) this.#costs.set(ctx, (costs = new Map()));
    const known = costs.get(key);
    if (known === 'open') throw new TemplateLimitError('cycle', 0);
    if (known) {
      this.#count('steps', known.steps);
      this.#count('partials', known.partials);
      this.#count('chars', known.chars);
      return;
    }
    costs.set(key, 'open');
    this.#enter({ tokens, at: 0, ctx, cost: { key, start: { ...this.totals } } });
  }

  #tokensOf(key: string, name: string, source: string, indentation: string, lineHasNonSpace: boolean): readonly Token[] {
    let tokens = this.#parsed.get(key);
    if (tokens) return tokens;
    const text = indentation ? writer.indentPartial(source, indentation, lineHasNonSpace) : source;
    try {
      tokens = writer.parse(text) as Token[];
    } catch (err) {
      throw ValidationError.field(`partials.${name}`, `is not a valid Mustache template: ${(err as Error).message}`);
    }
    this.#parsed.set(key, tokens);
    return tokens;
  }
}

const delta = (now: Totals, start: Totals): Totals => ({
  chars: now.chars - start.chars,
  partials: now.partials - start.partials,
  steps: now.steps - start.steps,
});

/** How long a walk holds the event loop before it hands it back. */
const SLICE_MS = 2;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The texts of several templates rendered as one, and the misses of them all. */
export interface RenderedTexts {
  texts: string[];
  missingVariables: string[];
  missingPartials: string[];
}

/**
 * Renders templates against one view within one set of limits (a message list's strings are one
 * render): all measured first, so a `TemplateLimitError` comes before anything is written; then
 * written. Hands the event loop back every SLICE_MS.
 */
export async function renderTemplates(templates: readonly CompiledTemplate[], view: Record<string, unknown>, opts: RenderOptions): Promise<RenderedTexts> {
  const root = new RenderContext(view);
  const measure = new Walk(true, opts);
  for (const t of templates) {
    measure.begin(t.tokens, root);
    while (!measure.run(performance.now() + SLICE_MS)) await nextTurn();
  }
  const write = new Walk(false, opts);
  const texts: string[] = [];
  for (const t of templates) {
    write.begin(t.tokens, root);
    while (!write.run(performance.now() + SLICE_MS)) await nextTurn();
    texts.push(write.text);
  }
  return { texts, missingVariables: [...write.state.missingVariables], missingPartials: [...write.state.missingPartials] };
}

/** One template, measured then written at once (no hand-back): for small renders and tests. */
export function renderTemplate(template: CompiledTemplate, view: Record<string, unknown>, opts: RenderOptions): Rendered {
  const root = new RenderContext(view);
  const measure = new Walk(true, opts);
  measure.begin(template.tokens, root);
  measure.run(Number.POSITIVE_INFINITY);
  const write = new Walk(false, opts);
  write.begin(template.tokens, root);
  write.run(Number.POSITIVE_INFINITY);
  return { text: write.text, missingVariables: [...write.state.missingVariables], missingPartials: [...write.state.missingPartials] };
}
