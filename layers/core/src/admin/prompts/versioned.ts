/**
 * The admin operations prompts and prompt partials share over their versioned store: find one the
 * caller may see, find one of its versions, publish a version (makeDefault), delete all of it.
 */
import type { CoreDeps } from '../../deps.ts';
import { NotFoundError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { auditTarget } from '../../store/audit-context.ts';
import type { HeadBase, VersionBase, VersionedRepository } from '../../store/versioned.ts';
import { isoNow, sees, visibleOr404 } from './common.ts';

type Stamped = HeadBase & { created_at: string; last_updated_at: string; last_updated_by: string | null };

export class VersionedAdmin<H extends Stamped, V extends VersionBase> {
  readonly #deps: CoreDeps;
  readonly repo: VersionedRepository<H, V>;
  /** "Prompt", "Prompt partial": how messages name the kind. */
  readonly #noun: string;
  constructor(deps: CoreDeps, repo: VersionedRepository<H, V>, noun: string) {
    this.#deps = deps;
    this.repo = repo;
    this.#noun = noun;
  }

  async get(caller: Principal, idOrSlug: string): Promise<H> {
    return visibleOr404(await this.repo.resolve(caller.organisationId, idOrSlug), caller, `${this.#noun} ${idOrSlug}`);
  }

  async list(caller: Principal): Promise<H[]> {
    const all = (await this.repo.list(caller.organisationId)).filter((h) => sees(caller, h.workspace_id));
    // Oldest first, so pages stay put while prompts change.
    return all.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }

  /** A version by number, `latest`, or version id; 404 naming `param` when there is none. */
  async version(head: H, key: string | number, param?: string): Promise<V> {
    const n = typeof key === 'number' ? key : key === 'latest' ? head.latest_version : /^\d+$/.test(key) ? Number(key) : undefined;
    const found =
      n !== undefined
        ? n >= 1 && n <= head.latest_version
          ? await this.repo.version(head.id, n, true)
          : undefined
        : (await this.repo.versions(head.id)).find((v) => v.id === key);
    if (!found) {
      const message = `${this.#noun} ${head.slug} has no version ${key} (latest: ${head.latest_version})`;
      throw new NotFoundError(param ? `${param}: ${message}` : message, param ? { param } : {});
    }
    return found;
  }

  /** The head as the next write stores it: stamped, its revision counted. */
  next(head: H, caller: Principal, change: Partial<H>): H {
    return { ...head, ...change, revision: head.revision + 1, last_updated_at: isoNow(this.#deps), last_updated_by: caller.userId ?? caller.keyId };
  }

  /** Publishes a version: references without a suffix name it from now on. */
  async makeDefault(caller: Principal, idOrSlug: string, n: number): Promise<Record<string, never>> {
    const head = await this.get(caller, idOrSlug);
    await this.version(head, n, 'version');
    auditTarget(head.id, head.workspace_id);
    await this.repo.saveHead(this.next(head, caller, { default_version: n } as Partial<H>), head.revision);
    this.#deps.prompts?.invalidate();
    return {};
  }

  async delete(caller: Principal, idOrSlug: string): Promise<Record<string, never>> {
    const head = await this.get(caller, idOrSlug);
    auditTarget(head.id, head.workspace_id);
    await this.repo.delete(head);
    this.#deps.prompts?.invalidate();
    return {};
  }
}
