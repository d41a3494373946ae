/**
 * Which values of an outbound request are credentials, so that the answer can be searched for
 * them (scrub.ts): the values of credential headers (the scheme of `Authorization` left out, a
 * Basic pair decoded), credential query parameters and a URL password, and what the caller names
 * besides (a target's key and secret options, also those that are never sent as they are, such
 * as the secret key SigV4 signs with).
 */

/** Header names that carry credentials: `authorization`, `x-api-key`, `api-key`, `x-amz-security-token`, ... */
const CREDENTIAL_HEADER = /authorization|cookie|api[-_]?key|access[-_]?key|token|secret|password|credential|(^|-)key$/i;
/** Named like a credential but chosen by the client, not a secret. */
const NOT_CREDENTIAL = /^idempotency-key$/i;
/** Query parameters that carry credentials (`?key=`, `?api-key=`, a presigned `X-Amz-Signature`). */
const CREDENTIAL_PARAM = /^(key|code|sig)$|api[-_]?key|token|secret|password|signature|credential/i;
/** Option names (a target's provider options) whose values are credentials. */
const SECRET_OPTION = /key|secret|token|password|credential/i;

/** The credential in a header value: after the auth scheme when there is one. */
function* headerSecrets(value: string): Generator<string> {
  const m = /^([A-Za-z][\w.+-]*)\s+(\S.*)$/.exec(value.trim());
  if (!m) {
    yield value.trim();
    return;
  }
  const [, scheme = '', rest = ''] = m;
  yield rest;
  if (scheme.toLowerCase() === 'basic') {
    const pair = Buffer.from(rest, 'base64').toString('utf8');
    yield pair;
    yield pair.slice(pair.indexOf(':') + 1);
  }
  const accessKey = /Credential=([^/,\s]+)/.exec(rest)?.[1];
  if (accessKey) yield accessKey;
}

/** The credentials an outbound request carries in its headers and URL. */
export function* requestSecrets(url: URL, headers: Readonly<Record<string, string>>): Generator<string> {
  for (const [name, value] of Object.entries(headers)) {
    if (CREDENTIAL_HEADER.test(name) && !NOT_CREDENTIAL.test(name)) yield* headerSecrets(value);
  }
  if (url.password) yield decodeURIComponent(url.password);
  if (url.search) {
    for (const [name, value] of url.searchParams) if (CREDENTIAL_PARAM.test(name)) yield value;
  }
}

/** Strings under secret-named fields, at any depth (a service account's `private_key`). */
function* secretStrings(value: unknown, named: boolean, depth = 0): Generator<string> {
  if (typeof value === 'string') {
    if (named) yield value;
  } else if (value !== null && typeof value === 'object' && depth < 4) {
    for (const [k, v] of Object.entries(value)) yield* secretStrings(v, named || SECRET_OPTION.test(k), depth + 1);
  }
}

/**
 * A target's credentials: its key (the config's, a managed provider's or one fetched from a secret
 * manager), the client's own, and its secret options (`aws_secret_access_key`,
 * `aws_session_token`, `azure_entra_client_secret`, a service account's private key ...).
 */
export function* targetSecrets(
  target: { api_key?: string | undefined; options: Readonly<Record<string, unknown>> },
  clientKey: string | undefined,
): Generator<string> {
  if (target.api_key !== undefined) yield target.api_key;
  if (clientKey !== undefined) yield clientKey;
  for (const [name, value] of Object.entries(target.options)) yield* secretStrings(value, SECRET_OPTION.test(name));
}
