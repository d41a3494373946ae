/**
 * The manager clients, their code imported on the first secret fetch: most gateway instances never
 * fetch one, so a cold start does not load it.
 */
import type { ManagerType, SecretManagerClient, SecretManagers } from '../ports/secret-managers.ts';
import type { ManagersInput } from './managers.ts';

export function lazySecretManagers(input: ManagersInput): SecretManagers {
  let built: Promise<SecretManagers> | undefined;
  const load = () => (built ??= import('./managers.ts').then((m) => m.createSecretManagers(input)));
  const client = (type: ManagerType): SecretManagerClient => ({ fetch: async (spec, signal) => (await load())[type].fetch(spec, signal) });
  return { aws_sm: client('aws_sm'), hashicorp_vault: client('hashicorp_vault'), azure_kv: client('azure_kv') };
}
