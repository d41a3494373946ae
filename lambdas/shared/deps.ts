/** Dependencies of a Lambda container: built once, on the first invocation, from the environment. */
import { loadConfig } from '../../layers/core/src/config.ts';
import { createDeps, type CoreDeps } from '../../layers/core/src/deps.ts';

let deps: Promise<CoreDeps> | undefined;

export function depsFromEnv(): Promise<CoreDeps> {
  deps ??= Promise.resolve().then(() => createDeps(loadConfig()));
  return deps;
}
