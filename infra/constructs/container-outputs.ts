/**
 * Stack outputs naming what a container joining this deployment sets (GW_STORAGE=aws,
 * docs/container.md): each output is in the stack that owns the resource (no cross-stack
 * reference), named after its variable (`QUEUE_URL_LOGS` -> `ContainerQueueUrlLogs`).
 */
import { CfnOutput, type Stack } from 'aws-cdk-lib';

export interface ContainerSetting {
  stack: Stack;
  variable: string;
  value: string;
}

const outputId = (variable: string): string =>
  `Container${variable
    .toLowerCase()
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')}`;

export function addContainerOutputs(settings: readonly ContainerSetting[]): void {
  for (const s of settings) {
    new CfnOutput(s.stack, outputId(s.variable), { value: s.value, description: `${s.variable} for a container joining this deployment (docs/container.md)` });
  }
}
