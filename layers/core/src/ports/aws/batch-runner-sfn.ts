/**
 * Batches run by Step Functions: `start` begins an execution of the batch state machine named
 * after the batch, so starting the same batch twice (a retried create, a resume) is refused by
 * Step Functions as ExecutionAlreadyExists and changes nothing.
 */
import type { SFNClient, SFNClientConfig } from '@aws-sdk/client-sfn';
import type { BatchRunner } from '../batch-runner.ts';

/** Execution names: 1 to 80 of `A-Z a-z 0-9 - _`; batch ids are already so (`batch_<time><hex>`). */
export const executionName = (batchId: string): string => batchId.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 80);

export class StepFunctionsBatchRunner implements BatchRunner {
  readonly #config: SFNClientConfig;
  readonly #stateMachineArn: string;
  #client: SFNClient | undefined;

  constructor(stateMachineArn: string, config: SFNClientConfig = {}) {
    this.#stateMachineArn = stateMachineArn;
    this.#config = config;
  }

  async start(batchId: string): Promise<void> {
    // Loaded on the first batch: the gateway's cold start does not carry the Step Functions client.
    const { SFNClient, StartExecutionCommand } = await import('@aws-sdk/client-sfn');
    this.#client ??= new SFNClient(this.#config);
    try {
      await this.#client.send(
        new StartExecutionCommand({ stateMachineArn: this.#stateMachineArn, name: executionName(batchId), input: JSON.stringify({ batchId }) }),
      );
    } catch (err) {
      // The batch's execution exists (running or done): the per-line records make this harmless.
      if ((err as { name?: string }).name !== 'ExecutionAlreadyExists') throw err;
    }
  }
}
