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
 */
import Mustache from 'mustache';
import { ValidationError } from '../http/errors.ts';
import { BoundedMap } from './bounded-map.ts';

export type EscapeMode = 'none' | 'html' | 'json';

/** Misses always render empty; whether they are an error is the caller's call (strict or lenient). */
export interface RenderOptions {
  escape: EscapeMode;
  /** Partial templates by the name the template uses (`footer`, `footer@2`), already loaded. */
  partials?: ReadonlyMap<string, string>;
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

type Token = string[];

interface RenderState {
  missingVariables: Set<string>;
  missingPartials: Set<string>;
  escape: (value: unknown) => string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/**
 * The specification's name resolution: the first part of a dotted name is looked up through the
 * context stack, the rest only inside what it found (mustache.js would also try outer contexts).
 * Undefined means not found; JSON variables never hold undefined, so a found `null` renders empty.
 */
class RenderContext extends Mustache.Context {
  readonly state: RenderState;

  constructor(view: unknown, parent: RenderContext | undefined, state: RenderState) {
    super(view, parent);
    this.state = state;
  }

  override push(view: unknown): RenderContext {
    return new RenderContext(view, this, this.state);
  }

  override lookup(name: string): unknown {
    if (name === '.') return this.view;
    const [head = '', ...rest] = name.split('.');
    for (let c: Mustache.Context | undefined = this; c; c = c.parent) {
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

/** The writer with our escaping, miss recording and partial lookup; state travels in the context. */
class StrictWriter extends Mustache.Writer {
  constructor() {
    super();
    // Partial texts are parsed once each while warm, within a bound.
    (this as { templateCache?: Mustache.TemplateCache }).templateCache = new BoundedMap<string, string>(500);
  }

  override escapedValue(token: Token, context: Mustache.Context): string {
    return this.#value(token, context, true);
  }

  override unescapedValue(token: Token, context: Mustache.Context): string {
    return this.#value(token, context, false);
  }

  #value(token: Token, context: Mustache.Context, escaped: boolean): string {
    const { state } = context as RenderContext;
    const name = token[1] as string;
    const value = context.lookup(name);
    if (value === undefined) state.missingVariables.add(name);
    if (value === undefined || value === null) return '';
    return escaped ? state.escape(value) : textOf(value);
  }

  override renderPartial(token: Token, context: Mustache.Context, partials?: Mustache.PartialsOrLookupFn, config?: Mustache.RenderOptions): string {
    const name = token[1] as string;
    const lookup = partials as Mustache.PartialLookupFn;
    if (lookup(name) === undefined) (context as RenderContext).state.missingPartials.add(name);
    return super.renderPartial(token, context, partials, config) ?? '';
  }
}

const writer = new StrictWriter();

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

export function renderTemplate(template: CompiledTemplate, view: Record<string, unknown>, opts: RenderOptions): Rendered {
  const state: RenderState = { missingVariables: new Set(), missingPartials: new Set(), escape: ESCAPES[opts.escape] };
  const partials = opts.partials;
  const lookup: Mustache.PartialLookupFn = (name) => partials?.get(name);
  const text = writer.renderTokens(template.tokens, new RenderContext(view, undefined, state), lookup, template.source);
  return { text, missingVariables: [...state.missingVariables], missingPartials: [...state.missingPartials] };
}
