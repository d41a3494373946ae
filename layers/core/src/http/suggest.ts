/**
 * The known name a mistyped one most likely meant: a field ("expire_at" -> "expires_at") for
 * messages that refuse unknown fields, an admin path's resource ("config" -> "configs") for the 404
 * of a path no route serves. Zod-free: the gateway's config validator, the admin bodies and the
 * app's 404 share it.
 */

/** Optimal string alignment distance (a transposition costs 1), or `limit + 1` once above it. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prevPrev: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (prevPrev[j - 2] as number) + 1);
      row.push(d);
      rowMin = Math.min(rowMin, d);
    }
    if (rowMin > limit) return limit + 1;
    prevPrev = prev;
    prev = row;
  }
  return prev[b.length] as number;
}

/** The known key an unknown one most likely meant (camelCase and dashes forgiven), if any is close. */
export function suggestion(key: string, known: readonly string[]): string | undefined {
  const normalized = key
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/-/g, '_')
    .toLowerCase();
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of known) {
    const d = editDistance(normalized, candidate, 2);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * A resource name without case, separators, number or extension: `Audit_Logs` and `audit-log` ->
 * `audit-log`, `policies` -> `policy`, `openapi.yaml` -> `openapi`.
 */
const stem = (name: string): string =>
  name
    .toLowerCase()
    .replace(/_/g, '-')
    .replace(/\.[a-z]+$/, '')
    .replace(/ies$/, 'y')
    .replace(/(?<!s)s$/, '');

/**
 * The known name that `name` is a slip of: the same but for case, `_` for `-`, singular and plural
 * or the extension; or one typo away (two for stems of 7 letters or more, none below 4, where one
 * letter makes another word). `name` itself, when known, is no slip.
 */
export function nearMiss(name: string, known: readonly string[]): string | undefined {
  if (known.includes(name)) return undefined;
  const s = stem(name);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const target = stem(candidate);
    const limit = target.length >= 7 ? 2 : target.length >= 4 ? 1 : 0;
    const d = editDistance(s, target, limit);
    if (d <= limit && d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}
