/**
 * Lookups over the built-in catalog, O(1): one map from provider and model id to its entry, built
 * once when the module loads. `findModel` also finds a dated or prefixed model name's base entry
 * when the catalog lacks the exact id (`gpt-4o-2024-08-06` -> `gpt-4o`, `openai/gpt-4o` -> `gpt-4o`).
 */
import { CATALOG, CATALOG_DATE, type CatalogRow } from './catalog-data.ts';

export type ModelType = 'chat' | 'embed' | 'image' | 'audio' | 'rerank' | 'moderation';

const TYPE_LETTERS: Readonly<Record<string, ModelType>> = { c: 'chat', e: 'embed', i: 'image', a: 'audio', r: 'rerank', m: 'moderation' };

/** USD per million tokens; a field is absent when the price is not published. */
export interface TokenPrice {
  input?: number;
  output?: number;
  cachedInput?: number;
}

export interface CatalogModel {
  id: string;
  provider: string;
  types: ModelType[];
  /** Tokens; absent when unknown. */
  contextWindow?: number;
  price: TokenPrice;
}

/** Unix seconds of the catalog's price date: the `created` of every catalog model. */
export const CATALOG_CREATED = Math.floor(Date.parse(`${CATALOG_DATE}T00:00:00Z`) / 1000);

function toModel(provider: string, row: CatalogRow, prefix = ''): CatalogModel {
  const [rowId, context, input, output, cachedInput, letters = 'c'] = row;
  const price: TokenPrice = {};
  if (input !== null) price.input = input;
  if (output !== null) price.output = output;
  if (typeof cachedInput === 'number') price.cachedInput = cachedInput;
  const model: CatalogModel = { id: prefix + rowId, provider, types: [...letters].map((l) => TYPE_LETTERS[l] ?? 'chat'), price };
  if (context > 0) model.contextWindow = context;
  return model;
}

const key = (provider: string, id: string) => `${provider}\u0000${id}`;

const BY_KEY = new Map<string, CatalogModel>();
const BY_LOWER_KEY = new Map<string, CatalogModel>();
const BY_PROVIDER = new Map<string, CatalogModel[]>();
const PREFIX = new Map<string, string>();

for (const [provider, group] of Object.entries(CATALOG)) {
  const list: CatalogModel[] = [];
  if (group.prefix) PREFIX.set(provider, group.prefix);
  for (const row of group.models) {
    const model = toModel(provider, row, group.prefix);
    list.push(model);
    BY_KEY.set(key(provider, model.id), model);
    BY_LOWER_KEY.set(key(provider, model.id.toLowerCase()), model);
  }
  BY_PROVIDER.set(provider, list);
}

function exact(provider: string, id: string): CatalogModel | undefined {
  return BY_KEY.get(key(provider, id)) ?? BY_LOWER_KEY.get(key(provider, id.toLowerCase()));
}

/** `-2024-08-06`, `-20241022`, `-0613` and `-2512` style release suffixes. */
const DATE_SUFFIX = /-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})$/;

/**
 * The catalog entry for a model as a provider names it. Tried in order, first hit wins: the exact
 * id (then case-insensitively), the provider's API prefix added or removed, an `org/` prefix
 * removed, a release-date suffix removed.
 */
export function findModel(provider: string, model: string): CatalogModel | undefined {
  const hit = exact(provider, model);
  if (hit) return hit;
  const candidates: string[] = [];
  const prefix = PREFIX.get(provider);
  if (prefix) candidates.push(model.startsWith(prefix) ? model.slice(prefix.length) : prefix + model);
  const slash = model.indexOf('/');
  if (slash > 0 && !model.startsWith('accounts/')) candidates.push(model.slice(slash + 1));
  for (const c of [model, ...candidates]) {
    const found = (c !== model ? exact(provider, c) : undefined) ?? (DATE_SUFFIX.test(c) ? exact(provider, c.replace(DATE_SUFFIX, '')) : undefined);
    if (found) return found;
  }
  return undefined;
}

/** The catalog models of one provider (empty when it has none), or of every provider. */
export function catalogModels(provider?: string): readonly CatalogModel[] {
  if (provider !== undefined) return BY_PROVIDER.get(provider) ?? [];
  return [...BY_PROVIDER.values()].flat();
}

export function catalogProviders(): string[] {
  return [...BY_PROVIDER.keys()];
}
