/**
 * The bootstrap custom resource: on the stack's first deployment it creates the organisation, the
 * `default` workspace and the owner admin key, which it puts into the stack's secret (never into an
 * output, a log or the response). Later updates and deletion change nothing (the table is retained).
 * It answers CloudFormation itself, on the pre-signed response URL, whatever happens: a function
 * that never answers would hold the stack for an hour.
 */
import middy from '@middy/core';
import { PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { CloudFormationCustomResourceEvent, CloudFormationCustomResourceResponse } from 'aws-lambda';
import { bootstrapDeployment, type DeploymentBootstrap } from '../../layers/core/src/bootstrap.ts';
import type { CoreDeps } from '../../layers/core/src/deps.ts';
import { depsFromEnv } from '../shared/deps.ts';

/** Stable, so an update never looks like a replacement (which would make CloudFormation delete it). */
export const BOOTSTRAP_PHYSICAL_ID = 'gantry-bootstrap';

export type KeepKey = (secretId: string, adminKey: string) => Promise<void>;

const putSecret: KeepKey = async (secretId, adminKey) => {
  await new SecretsManagerClient({}).send(new PutSecretValueCommand({ SecretId: secretId, SecretString: adminKey }));
};

async function run(event: CloudFormationCustomResourceEvent, getDeps: () => Promise<CoreDeps>, keep: KeepKey): Promise<DeploymentBootstrap | undefined> {
  if (event.RequestType === 'Delete') return undefined;
  const secretId = event.ResourceProperties.AdminKeySecretId;
  if (typeof secretId !== 'string' || secretId === '') throw new Error('The resource property AdminKeySecretId is missing');
  return bootstrapDeployment(await getDeps(), (key) => keep(secretId, key));
}

async function respond(event: CloudFormationCustomResourceEvent, response: CloudFormationCustomResourceResponse): Promise<void> {
  // The URL is pre-signed without a content type: sending one would break the signature.
  const res = await fetch(event.ResponseURL, { method: 'PUT', headers: { 'content-type': '' }, body: JSON.stringify(response) });
  if (!res.ok) throw new Error(`CloudFormation refused the response: ${res.status}`);
}

export function createBootstrapHandler(getDeps: () => Promise<CoreDeps>, keep: KeepKey = putSecret) {
  return middy<CloudFormationCustomResourceEvent, void>().handler(async (event) => {
    const base = {
      StackId: event.StackId,
      RequestId: event.RequestId,
      LogicalResourceId: event.LogicalResourceId,
      PhysicalResourceId: event.RequestType === 'Create' ? BOOTSTRAP_PHYSICAL_ID : event.PhysicalResourceId,
    };
    try {
      const result = await run(event, getDeps, keep);
      const data = result ? { OrganisationId: result.organisationId, WorkspaceId: result.workspaceId, Created: String(result.created) } : {};
      await respond(event, { ...base, Status: 'SUCCESS', Data: data });
    } catch (err) {
      // The reason is shown in the stack's events: the error's message only, never a key.
      const reason = err instanceof Error ? `${err.name}: ${err.message}` : 'Bootstrap failed';
      console.error(JSON.stringify({ message: 'bootstrap failed', reason }));
      await respond(event, { ...base, Status: 'FAILED', Reason: reason.slice(0, 1000) });
    }
  });
}

export const handler = createBootstrapHandler(depsFromEnv);
