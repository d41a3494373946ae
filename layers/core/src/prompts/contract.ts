/**
 * What the prompt resource (admin: prompts, partials, versions, labels) gives the parts that use
 * prompts (render, completions through the gateway, the Responses API's `prompt`). The admin side
 * implements `PromptSource` over the store; the render side only reads through it, so either can
 * change its storage or its template engine without the other.
 */
import type { Principal } from '../kernel/principal.ts';

/** One immutable version of a prompt, as rendering needs it. */
export interface PromptVersion {
  promptId: string;
  slug: string;
  versionId: string;
  /** 1, 2, 3 ... in the order versions were made. */
  version: number;
  /** The Mustache template (`string` in the API). */
  template: string;
  /** The version's model parameters (temperature, max_tokens, ...), merged under the request's hyperparameters. */
  parameters: Record<string, unknown>;
  model: string | null;
  /** A managed provider slug (`@openai-prod`) or a legacy virtual key; null: the request's own routing. */
  provider: string | null;
  functions: unknown[] | null;
  tools: unknown[] | null;
  toolChoice: unknown;
  /** The rendered text is the JSON request body itself. */
  isRawTemplate: boolean;
  /** Missing variables and partials render empty instead of failing (the prompt's own setting). */
  lenient: boolean;
}

/** One immutable version of a prompt partial (`{{>slug}}`, `{{>slug@2}}`). */
export interface PartialVersion {
  partialId: string;
  slug: string;
  versionId: string;
  version: number;
  content: string;
}

/**
 * Prompts and partials by reference, within what the principal may use. A reference is an id or
 * slug, optionally with `@<n>` (a version), `@latest`, or `@<label>` (`production`, ...); without a
 * suffix it is the default (published) version. Answers undefined when nothing matches.
 * Implementations cache versions (immutable) freely, and label/default pointers for at most 5 s.
 */
export interface PromptSource {
  prompt(principal: Principal, ref: string): Promise<PromptVersion | undefined>;
  partial(principal: Principal, ref: string): Promise<PartialVersion | undefined>;
  /** After a write on this instance: label and default pointers are read again. */
  invalidate(): void;
}
