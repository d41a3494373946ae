/** The organisation: its name, security settings (with their defaults) and session settings. */
import type { CoreDeps } from '../../deps.ts';
import { NotFoundError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { invalidateSettings, organisationSettings, SECURITY_SETTING_DEFAULTS, type SecuritySettings } from '../../policy/security-settings.ts';
import { auditTarget } from '../../store/audit-context.ts';
import type { OrganisationRecord } from '../../store/entities.ts';
import type { UpdateOrganisationBody } from './schema.ts';

export interface OrganisationView {
  object: 'organisation';
  id: string;
  name: string;
  /** Every setting with its value in force. */
  security_settings: SecuritySettings;
  security_setting_defaults: SecuritySettings;
  session_settings: { max_session_ttl: number | null };
  created_at: string;
  last_updated_at: string;
}

export const organisationView = (o: OrganisationRecord): OrganisationView => ({
  object: 'organisation',
  id: o.id,
  name: o.name,
  security_settings: organisationSettings(o),
  security_setting_defaults: { ...SECURITY_SETTING_DEFAULTS },
  session_settings: { max_session_ttl: o.session_settings?.max_session_ttl ?? null },
  created_at: o.created_at,
  last_updated_at: o.last_updated_at,
});

export class OrganisationService {
  readonly #deps: CoreDeps;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
  }

  async #get(caller: Principal): Promise<OrganisationRecord> {
    const org = await this.#deps.repos.organisations.get(caller.organisationId);
    if (!org) throw new NotFoundError(`Organisation ${caller.organisationId} not found`);
    return org;
  }

  async get(caller: Principal): Promise<OrganisationView> {
    return organisationView(await this.#get(caller));
  }

  async update(caller: Principal, body: UpdateOrganisationBody): Promise<void> {
    const org = await this.#get(caller);
    auditTarget(org.id, null);
    const settings: Record<string, boolean> = { ...org.security_settings };
    for (const [k, v] of Object.entries(body.security_settings ?? {})) {
      if (v === null) delete settings[k];
      else if (v !== undefined) settings[k] = v;
    }
    await this.#deps.repos.organisations.update({
      ...org,
      ...(body.name !== undefined ? { name: body.name } : {}),
      security_settings: settings,
      ...(body.session_settings !== undefined ? { session_settings: body.session_settings } : {}),
      last_updated_at: new Date(this.#deps.clock.now()).toISOString(),
      last_updated_by: caller.keyId,
    });
    invalidateSettings(this.#deps);
    this.#deps.keyAuth.invalidateAll();
  }
}
