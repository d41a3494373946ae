/** The three secret manager clients of a process, built from the configuration. */
import type { SecretsConfig } from '../config.ts';
import type { Upstream } from '../ports/upstream.ts';
import type { Clock } from '../ports/clock.ts';
import type { FetchCredentials } from '../providers/transform.ts';
import type { TrustedHosts } from '../security/ssrf.ts';
import { AwsSecretsManagerClient } from './aws-sm.ts';
import { AzureKeyVaultClient } from './azure-kv.ts';
import type { SecretManagers } from '../ports/secret-managers.ts';
import { managerHttp } from './http.ts';
import { VaultClient } from './vault.ts';

export interface ManagersInput {
  config: SecretsConfig;
  region: string;
  upstream: Upstream;
  trustedHosts: TrustedHosts;
  clock: Clock;
  assumeRole: FetchCredentials;
}

export function createSecretManagers(i: ManagersInput): SecretManagers {
  const http = managerHttp(i.upstream, i.trustedHosts, i.config.timeoutMs);
  return {
    aws_sm: new AwsSecretsManagerClient({ region: i.region, endpoint: i.config.awsEndpoint, assumeRole: i.assumeRole, timeoutMs: i.config.timeoutMs }),
    hashicorp_vault: new VaultClient({ http, clock: i.clock, kubernetesTokenFile: i.config.vaultKubernetesTokenFile }),
    azure_kv: new AzureKeyVaultClient({
      http,
      clock: i.clock,
      authorityHost: i.config.azureAuthorityHost,
      identityEndpoint: i.config.identityEndpoint,
      identityHeader: i.config.identityHeader,
    }),
  };
}
