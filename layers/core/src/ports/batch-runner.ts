/**
 * Starts a batch run by the gateway once it is created: in AWS a Step Functions execution (its
 * Lambda steps call the engine in batches/engine.ts), locally the in-process driver
 * (batches/local-driver.ts). Starting a batch that runs already is harmless: the engine's
 * per-line records decide which lines still run.
 */
export interface BatchRunner {
  start(batchId: string): Promise<void>;
}

/**
 * How a runtime hands over its runner: built from the core's dependencies once they exist (the
 * local driver runs the engine with them). `CoreDeps` is only a type here, so no import cycle.
 */
export type BatchRunnerFactory = (deps: import('../deps.ts').CoreDeps) => BatchRunner;
