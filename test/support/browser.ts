/**
 * A real Chromium for the console's browser tests, driven by playwright-core. The browser comes
 * with the project: the build inside the `@sparticuz/chromium` npm package (unpacked to /tmp on
 * first use), else the system's `chromium`. Finding none is a failure that says how to get one.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { chromium, type Browser, type Page } from 'playwright-core';

const SYSTEM_BROWSERS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
// Quiet and offline: no update checks, sync or first-run pages during tests.
const QUIET = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

export const NO_BROWSER =
  'No Chromium found for the console browser tests. Run `npm ci` (it installs @sparticuz/chromium, a Chromium build inside an npm package), ' +
  'or install the system browser (`sudo apt-get install -y chromium` on Debian/Ubuntu), or set GW_CHROMIUM to a Chromium executable.';

async function packaged(): Promise<{ path: string; args: string[] } | undefined> {
  try {
    const { default: pkg } = await import('@sparticuz/chromium');
    // Its Lambda-minded --single-process cannot hold a second browser context (the role test opens one).
    return { path: await pkg.executablePath(), args: pkg.args.filter((a) => a !== '--single-process') };
  } catch {
    return undefined;
  }
}

export async function findBrowser(): Promise<{ path: string; args: string[] }> {
  const chosen = process.env.GW_CHROMIUM;
  if (chosen) {
    if (!existsSync(chosen)) throw new Error(`GW_CHROMIUM=${chosen} does not exist. ${NO_BROWSER}`);
    return { path: chosen, args: [] };
  }
  const found = await packaged();
  if (found && existsSync(found.path)) return found;
  const system = SYSTEM_BROWSERS.find((p) => existsSync(p));
  if (system) return { path: system, args: ['--headless=new', '--no-sandbox'] };
  throw new Error(NO_BROWSER);
}

export async function launchBrowser(): Promise<Browser> {
  const found = await findBrowser();
  return chromium.launch({ executablePath: found.path, args: [...found.args, ...QUIET], headless: true });
}

let axeSource: Promise<string> | undefined;

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/** axe-core's violations of impact serious or critical on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  axeSource ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  // Evaluated over the DevTools protocol, which the page's CSP does not govern (a <script> tag would be refused).
  await page.evaluate(await axeSource);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: Document) => Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run(document)).violations;
  });
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
