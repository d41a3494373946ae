/**
 * `PromptSource` over the prompt store. Versions never change, so they are cached without expiry;
 * what a reference points at (the published version, a label, `latest`, the labels' names) is read
 * again after at most 5 s, and at once after a write on this instance (`invalidate`). So a label
 * move or a makeDefault reaches every warm instance within 5 s, and a warm render reads nothing.
 * Gateway code: no zod, no admin modules.
 */
import { isOrganisationPrincipal, type Principal } from '../kernel/principal.ts';
import type { Clock } from '../ports/clock.ts';
import { LabelRepository, universalLabels, type LabelRecord } from '../store/prompt-catalog.ts';
import {
  PartialRepository,
  PromptRepository,
  type PartialRecord,
  type PartialVersionRecord,
  type PromptRecord,
  type PromptVersionRecord,
} from '../store/prompts.ts';
import type { TableClient } from '../store/repositories.ts';
import type { HeadBase, VersionBase, VersionedRepository } from '../store/versioned.ts';
import type { PartialVersion, PromptSource, PromptVersion } from './contract.ts';

/** The longest a label or default pointer may be served stale (issue 17: a move reaches every instance within 5 s). */
export const MAX_POINTER_TTL_MS = 5_000;
const MAX_ENTRIES = 5_000;

interface Timed<T> {
  value: T;
  at: number;
}

/** Values read through `load`, kept `ttlMs`; a failed read serves the stale value when there is one. */
class TimedCache<T> {
  readonly #entries = new Map<string, Timed<T>>();
  readonly #clock: Clock;
  readonly #ttlMs: number;
  constructor(clock: Clock, ttlMs: number) {
    this.#clock = clock;
    this.#ttlMs = ttlMs;
  }

  async get(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.#clock.now();
    const hit = this.#entries.get(key);
    if (hit && now - hit.at < this.#ttlMs) return hit.value;
    let value: T;
    try {
      value = await load();
    } catch (err) {
      // The table cannot be read: what was read before keeps serving meanwhile.
      if (hit) return hit.value;
      throw err;
    }
    if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
    this.#entries.set(key, { value, at: now });
    return value;
  }

  clear(): void {
    this.#entries.clear();
  }
}

/** `slug@suffix` split at its last `@`; a leading `@` is part of the name. */
export function splitRef(ref: string): { name: string; suffix: string | undefined } {
  const at = ref.lastIndexOf('@');
  return at <= 0 ? { name: ref, suffix: undefined } : { name: ref.slice(0, at), suffix: ref.slice(at + 1) };
}

const visible = <H extends HeadBase & { status: string }>(head: H | undefined, p: Principal): H | undefined =>
  head && head.status === 'active' && (isOrganisationPrincipal(p) || head.workspace_id === p.workspaceId) ? head : undefined;

export const toPromptVersion = (head: PromptRecord, v: PromptVersionRecord): PromptVersion => ({
  promptId: head.id,
  slug: head.slug,
  versionId: v.id,
  version: v.version,
  template: v.string,
  parameters: v.parameters,
  model: v.model,
  provider: v.provider ?? v.virtual_key,
  functions: v.functions,
  tools: v.tools,
  toolChoice: v.tool_choice,
  isRawTemplate: v.is_raw_template,
  lenient: v.template_metadata.lenient === true,
});

export class StoredPromptSource implements PromptSource {
  readonly #prompts: PromptRepository;
  readonly #partials: PartialRepository;
  readonly #labelRepo: LabelRepository;
  readonly #promptHeads: TimedCache<PromptRecord | undefined>;
  readonly #partialHeads: TimedCache<PartialRecord | undefined>;
  readonly #labels: TimedCache<LabelRecord[]>;
  /** Immutable: kept until the map is full. */
  readonly #versions = new Map<string, VersionBase>();

  constructor(table: TableClient, clock: Clock, ttlMs: number) {
    const pointerTtl = Math.min(ttlMs, MAX_POINTER_TTL_MS);
    this.#prompts = new PromptRepository(table);
    this.#partials = new PartialRepository(table);
    this.#labelRepo = new LabelRepository(table);
    this.#promptHeads = new TimedCache(clock, pointerTtl);
    this.#partialHeads = new TimedCache(clock, pointerTtl);
    this.#labels = new TimedCache(clock, pointerTtl);
  }

  async #version<H extends HeadBase, V extends VersionBase>(repo: VersionedRepository<H, V>, head: H, n: number): Promise<V | undefined> {
    if (!Number.isSafeInteger(n) || n < 1 || n > head.latest_version) return undefined;
    const key = `${head.id}#${n}`;
    const hit = this.#versions.get(key) as V | undefined;
    if (hit) return hit;
    const v = await repo.version(head.id, n, true);
    if (v) {
      if (this.#versions.size >= MAX_ENTRIES) this.#versions.clear();
      this.#versions.set(key, v);
    }
    return v;
  }

  /** The version number a suffix names: none (published), a number, `latest`, or a label usable in the head's workspace. */
  async #pick(head: HeadBase, suffix: string | undefined, labels?: Record<string, number>): Promise<number | undefined> {
    if (suffix === undefined) return head.default_version;
    if (/^\d+$/.test(suffix)) return Number(suffix);
    if (suffix === 'latest') return head.latest_version;
    if (!labels) return undefined;
    const all = await this.#labels.get(head.organisation_id, async () => [
      ...universalLabels(head.organisation_id),
      ...(await this.#labelRepo.list(head.organisation_id)),
    ]);
    const label = all.find((l) => l.name === suffix && (l.workspace_id === null || l.workspace_id === head.workspace_id));
    return label ? labels[label.id] : undefined;
  }

  async prompt(principal: Principal, ref: string): Promise<PromptVersion | undefined> {
    const { name, suffix } = splitRef(ref);
    const org = principal.organisationId;
    const head = visible(await this.#promptHeads.get(`${org}/${name}`, () => this.#prompts.resolve(org, name)), principal);
    if (!head) return undefined;
    const n = await this.#pick(head, suffix, head.labels);
    const v = n === undefined ? undefined : await this.#version(this.#prompts, head, n);
    return v ? toPromptVersion(head, v) : undefined;
  }

  async partial(principal: Principal, ref: string): Promise<PartialVersion | undefined> {
    const { name, suffix } = splitRef(ref);
    const org = principal.organisationId;
    const head = visible(await this.#partialHeads.get(`${org}/${name}`, () => this.#partials.resolve(org, name)), principal);
    if (!head) return undefined;
    const n = await this.#pick(head, suffix);
    const v: PartialVersionRecord | undefined = n === undefined ? undefined : await this.#version(this.#partials, head, n);
    return v ? { partialId: head.id, slug: head.slug, versionId: v.id, version: v.version, content: v.string } : undefined;
  }

  invalidate(): void {
    this.#promptHeads.clear();
    this.#partialHeads.clear();
    this.#labels.clear();
  }
}
