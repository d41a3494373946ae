/**
 * A test double of `PromptSource` (prompts/contract.ts) over fixed versions: rendering and the
 * gateway are tested against the contract; the prompt resource implements it over the store.
 * References resolve as the contract says: id or slug, `@<n>`, `@latest`, `@<label>`, else the
 * default version.
 */
import type { PartialVersion, PromptSource, PromptVersion } from '../../layers/core/src/prompts/contract.ts';
import type { Principal } from '../../layers/core/src/kernel/principal.ts';

export function promptVersion(over: Partial<PromptVersion> & Pick<PromptVersion, 'template'>): PromptVersion {
  const version = over.version ?? 1;
  return {
    promptId: 'pr-1',
    slug: 'greeting',
    versionId: `${over.promptId ?? 'pr-1'}-v${version}`,
    version,
    parameters: {},
    model: null,
    provider: null,
    functions: null,
    tools: null,
    toolChoice: null,
    isRawTemplate: false,
    lenient: false,
    ...over,
  };
}

export function partialVersion(slug: string, content: string, version = 1): PartialVersion {
  return { partialId: `pp-${slug}`, slug, versionId: `pp-${slug}-v${version}`, version, content };
}

interface Versioned {
  slug: string;
  version: number;
}

export class PromptsDouble implements PromptSource {
  /** Every reference asked for, with the workspace it was asked in. */
  readonly asked: Array<{ workspaceId: string | null; ref: string }> = [];
  readonly #prompts: PromptVersion[];
  readonly #partials: PartialVersion[];
  /** `slug@label` -> version number; the default version under `slug@`. */
  readonly pointers = new Map<string, number>();
  /** Only principals of this workspace see anything (when set). */
  workspaceId: string | undefined;

  constructor(prompts: PromptVersion[], partials: PartialVersion[] = []) {
    this.#prompts = prompts;
    this.#partials = partials;
  }

  async prompt(principal: Principal, ref: string): Promise<PromptVersion | undefined> {
    this.asked.push({ workspaceId: principal.workspaceId, ref });
    if (this.workspaceId && principal.workspaceId !== this.workspaceId) return undefined;
    return this.#pick(
      this.#prompts.filter((p) => p.promptId === name(ref) || p.slug === name(ref)),
      ref,
    );
  }

  async partial(principal: Principal, ref: string): Promise<PartialVersion | undefined> {
    this.asked.push({ workspaceId: principal.workspaceId, ref });
    if (this.workspaceId && principal.workspaceId !== this.workspaceId) return undefined;
    return this.#pick(
      this.#partials.filter((p) => p.partialId === name(ref) || p.slug === name(ref)),
      ref,
    );
  }

  invalidate(): void {}

  #pick<T extends Versioned>(versions: T[], ref: string): T | undefined {
    const at = ref.indexOf('@');
    const suffix = at < 0 ? '' : ref.slice(at + 1);
    const latest = versions.reduce<T | undefined>((a, b) => (a && a.version > b.version ? a : b), undefined);
    if (suffix === 'latest') return latest;
    if (/^\d+$/.test(suffix)) return versions.find((v) => v.version === Number(suffix));
    const pointed = this.pointers.get(`${versions[0]?.slug}@${suffix}`);
    if (pointed !== undefined) return versions.find((v) => v.version === pointed);
    return suffix === '' ? latest : undefined;
  }
}

const name = (ref: string): string => (ref.includes('@') ? ref.slice(0, ref.indexOf('@')) : ref);
