/**
 * `secret_mappings` of integrations: `[{target_field, secret_reference_id, secret_key?}]`, where
 * `target_field` is `key` or `configurations.<field>` of the integration's provider, each at most
 * once, and the reference (id or slug) is one of the organisation's. Stored with the reference's id.
 */
import type { CoreDeps } from '../../deps.ts';
import type { FieldProblem } from '../../http/errors.ts';
import type { ProviderDefinition } from '../../providers/types.ts';
import type { SecretMapping } from '../../ports/secret-managers.ts';
import { SecretReferenceRepository } from '../../store/secret-references.ts';
import { configurationFields } from '../integrations/configurations.ts';
import type { SecretMappingBody } from './mapping-schema.ts';

/** What a mapped configuration field holds while the rest of the configuration is validated. */
export const MAPPED_PLACEHOLDER = 'resolved-from-a-secret-reference';

export async function checkMappings(
  deps: CoreDeps,
  orgId: string,
  provider: ProviderDefinition | undefined,
  mappings: readonly SecretMappingBody[],
  problems: FieldProblem[],
): Promise<SecretMapping[]> {
  const repo = new SecretReferenceRepository(deps.repos.table);
  const fields = provider ? configurationFields(provider) : {};
  const seen = new Set<string>();
  const out: SecretMapping[] = [];
  for (const [i, m] of mappings.entries()) {
    const at = `secret_mappings[${i}]`;
    const field = m.target_field.startsWith('configurations.') ? m.target_field.slice('configurations.'.length) : undefined;
    if (m.target_field !== 'key' && (field === undefined || (provider && !fields[field]))) {
      const known = [
        'key',
        ...Object.keys(fields)
          .sort()
          .map((f) => `configurations.${f}`),
      ].join(', ');
      problems.push({ path: `${at}.target_field`, message: `must be "key" or "configurations.<field>" of the provider; known: ${known}` });
    } else if (seen.has(m.target_field)) {
      problems.push({ path: `${at}.target_field`, message: `maps ${m.target_field} a second time` });
    }
    seen.add(m.target_field);
    const ref = await repo.resolve(orgId, m.secret_reference_id);
    if (!ref) problems.push({ path: `${at}.secret_reference_id`, message: `no secret reference "${m.secret_reference_id}" in this organisation` });
    else out.push({ target_field: m.target_field, secret_reference_id: ref.id, ...(m.secret_key ? { secret_key: m.secret_key } : {}) });
  }
  return out;
}

/** The configuration with a placeholder in each mapped field, so rules that require it hold. */
export function withMappedFields(
  configurations: Record<string, unknown> | undefined,
  mappings: readonly SecretMappingBody[],
): Record<string, unknown> | undefined {
  const mapped = mappings.filter((m) => m.target_field.startsWith('configurations.')).map((m) => m.target_field.slice('configurations.'.length));
  if (mapped.length === 0) return configurations;
  return { ...Object.fromEntries(mapped.map((f) => [f, MAPPED_PLACEHOLDER])), ...configurations };
}

/** The split configuration without the placeholders (the value comes from the manager). */
export function dropPlaceholders<S extends { plain: Record<string, unknown>; secret: Record<string, unknown> }>(split: S): S {
  for (const part of [split.plain, split.secret]) for (const [k, v] of Object.entries(part)) if (v === MAPPED_PLACEHOLDER) delete part[k];
  return split;
}
