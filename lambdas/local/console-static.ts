/**
 * The admin console's files (dist/console/, built by `infra/local-build.ts console`) at /console/
 * on the local server. Unknown page paths get index.html (the app routes them); hashed assets are
 * cached for a year, index.html is revalidated. Every answer carries a strict CSP (no inline
 * script, no framing) so that an injected string cannot run in the page that holds the session.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';

export const CONSOLE_PATH = '/console';

export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
  '.map': 'application/json',
};

/** Vite names built assets `name-<hash>.ext`: their content never changes under that name. */
const HASHED = /-[A-Za-z0-9_-]{8,}\.[a-z0-9]+$/;
const YEAR = 'public, max-age=31536000, immutable';

export const isConsolePath = (pathname: string): boolean => pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`);

function send(res: ServerResponse, status: number, headers: Record<string, string>, body?: string): void {
  res.writeHead(status, { ...CONSOLE_SECURITY_HEADERS, ...headers });
  res.end(body);
}

/** The file a path names inside `root`, or undefined when it escapes it. */
function fileOf(root: string, pathname: string): string | undefined {
  let rel: string;
  try {
    rel = decodeURIComponent(pathname.slice(CONSOLE_PATH.length + 1));
  } catch {
    return undefined;
  }
  const file = path.resolve(root, rel || 'index.html');
  return file === root || file.startsWith(root + path.sep) ? file : undefined;
}

const isFile = async (file: string): Promise<boolean> => (await stat(file).catch(() => undefined))?.isFile() ?? false;

/** Serves one request below /console (the caller checked `isConsolePath`). */
export async function serveConsole(root: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://local');
  if (url.pathname === CONSOLE_PATH) return send(res, 308, { location: `${CONSOLE_PATH}/${url.search}` });
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }, 'Method not allowed\n');
  const index = path.join(root, 'index.html');
  if (!(await isFile(index))) {
    return send(
      res,
      404,
      { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' },
      `The console is not built (no ${index}): run \`node infra/local-build.ts console\` or \`npm start\`.\n`,
    );
  }
  let file = fileOf(root, url.pathname);
  if (!file || !(await isFile(file))) {
    // A missing asset is a 404 (a script must not receive HTML); any other path is a page of the app.
    if (!file || path.extname(file) !== '') return send(res, 404, { 'content-type': 'text/plain; charset=utf-8' }, 'Not found\n');
    file = index;
  }
  const headers = {
    'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
    'cache-control': file !== index && HASHED.test(file) ? YEAR : 'no-cache',
  };
  if (req.method === 'HEAD') return send(res, 200, headers);
  res.writeHead(200, { ...CONSOLE_SECURITY_HEADERS, ...headers });
  createReadStream(file)
    .on('error', () => res.destroy())
    .pipe(res);
}
