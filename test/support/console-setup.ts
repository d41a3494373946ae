/** The browser lane's console: dist/console/ built when its sources changed since the last build. */
import { buildConsole } from '../../infra/local-build.ts';

export async function setup(): Promise<void> {
  await buildConsole({ ifChanged: true });
}
