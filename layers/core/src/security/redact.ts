/**
 * The one redaction of secrets, used by request logs, audit entries and exports alike. A value is
 * secret by its field's name (provider keys, passwords, tokens, client secrets, authorization ...,
 * at any depth) or by its shape wherever it appears (Gantry keys and invite tokens, provider key
 * prefixes, AWS access keys, JWTs, bearer credentials). A field named `key` is a name, not a
 * secret, when it pairs with a `value` or sits in a list of names (a policy's `conditions: [{key,
 * value}]` and `group_by: [{key}]` read as written); its value is still checked for secret shapes.
 */

/** The placeholder in request logs and exports. */
export const REDACTED = '[REDACTED]';
/** The audit log's placeholder. */
export const AUDIT_MASK = '****';

/**
 * Field names, lower-cased without `-` and `_`: these endings (and `key` on its own) are secret, and
 * `custom_headers` (an MCP integration's static headers, credentials whatever their names).
 */
const SECRET_NAME =
  /^(key|.*(apikey|secret|secretkey|accesskey|privatekey|token|password|passwd|credential|credentials|authorization|cookie|secretid)|vertexserviceaccountjson|vaultroleid|customheaders)$/;

/** Secret formats, found inside any string. */
const SECRET_VALUE = new RegExp(
  [
    String.raw`\bgwi?_[A-Za-z0-9_-]{16,}`, // Gantry API keys and invite tokens
    String.raw`\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{10,}`, // OpenAI, Anthropic and the many OpenAI-alikes
    String.raw`\b(?:AKIA|ASIA)[A-Z0-9]{12,}`, // AWS access key ids
    String.raw`\bAIza[0-9A-Za-z_-]{20,}`, // Google API keys
    String.raw`\b(?:gsk|hf|r8|pplx|xai|ghp|gho|github_pat)[_-][A-Za-z0-9_]{16,}`, // Groq, Hugging Face, Replicate, Perplexity, xAI, GitHub
    String.raw`\bxox[abprs]-[A-Za-z0-9-]{10,}`, // Slack
    String.raw`\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`, // JWTs
  ].join('|'),
  'g',
);

/** The credential after an HTTP auth scheme; the scheme itself stays readable. */
const AUTH_SCHEME = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;

const normalName = (name: string): string => name.replace(/[-_]/g, '').toLowerCase();

/** Answers by field name: every log event asks again about the same few dozen names. */
const secretNames = new Map<string, boolean>();
const SECRET_NAMES_KEPT = 2_048;

/** Whether a field of this name holds a secret (wherever it is, except `key` beside a `value`). */
export function isSecretKey(name: string): boolean {
  let secret = secretNames.get(name);
  if (secret === undefined) {
    secret = SECRET_NAME.test(normalName(name));
    if (secretNames.size < SECRET_NAMES_KEPT) secretNames.set(name, secret);
  }
  return secret;
}

/** `text` with every secret-shaped part replaced by `mask`. */
export function redactText(text: string, mask = REDACTED): string {
  if (text.length < 8) return text;
  return text.replace(SECRET_VALUE, mask).replace(AUTH_SCHEME, (_m, scheme: string) => `${scheme} ${mask}`);
}

const maskable = (v: unknown): boolean => v !== null && v !== undefined && v !== '' && typeof v !== 'boolean';

/** Lists whose items' `key` names a field. */
const NAME_LISTS = new Set(['conditions', 'groupby']);

/** `value` with every secret replaced: a copy where something changed, the value itself otherwise. */
export function redact(value: unknown, mask = REDACTED, maxDepth = 32, keyIsName = false): unknown {
  if (typeof value === 'string') return redactText(value, mask);
  if (value === null || typeof value !== 'object') return value;
  if (maxDepth <= 0) return mask;
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    value.forEach((v, i) => {
      const r = redact(v, mask, maxDepth - 1, keyIsName);
      if (r !== v) (out ??= [...value])[i] = r;
    });
    return out ?? value;
  }
  const record = value as Record<string, unknown>;
  const named = keyIsName || 'value' in record;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(record)) {
    const secret = isSecretKey(k) && maskable(v) && !(named && k.toLowerCase() === 'key');
    const r = secret ? mask : redact(v, mask, maxDepth - 1, Array.isArray(v) && NAME_LISTS.has(normalName(k)));
    // A key pasted as a field name (`{"sk-...": 1}` in metadata) is as secret as one pasted as a value.
    const name = redactText(k, mask);
    if (name !== k) {
      out ??= { ...record };
      delete out[k];
      out[name] = r;
    } else if (r !== v) (out ??= { ...record })[k] = r;
  }
  return out ?? value;
}

/**
 * `record` with the secrets in every string attribute replaced, but those in `own` (what the
 * service sets itself: ids, times, the item's key): for records built from a request (a log event,
 * an audit entry), where any attribute may hold what a client pasted into a header, a path, a query
 * or an id field. A copy where something changed, the record itself otherwise.
 */
export function redactAttributes<T extends object>(record: T, own: ReadonlySet<string>, mask = REDACTED): T {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(record)) {
    if (typeof v !== 'string' || own.has(k)) continue;
    const r = redactText(v, mask);
    if (r !== v) (out ??= { ...(record as Record<string, unknown>) })[k] = r;
  }
  return (out as T | undefined) ?? record;
}

/** Query parameters as a plain object, secrets redacted (`?token=...` of an invite, `?api_key=...`). */
export function redactQuery(query: URLSearchParams, mask = REDACTED): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of query) out[redactText(k, mask)] = isSecretKey(k) && v !== '' ? mask : redactText(v, mask);
  return out;
}
