/**
 * `GET /v1/audit-logs`: entries of a time range (at most 366 days; one bound is enough, the other
 * defaults to 24 hours from it), filtered by the
 * reference spec's fields and paged like every list.
 */
import * as z from 'zod';
import type { CoreDeps } from '../../deps.ts';
import { ValidationError } from '../../http/errors.ts';
import type { Principal } from '../../kernel/principal.ts';
import { AuditRepository, type AuditRecord } from '../../store/audit.ts';
import { parseWith } from '../route.ts';

export const MAX_RANGE_DAYS = 366;

const isoDateTime = z.iso.datetime({ offset: true, error: 'is required and must be an ISO 8601 date-time' });

const querySchema = z.object({
  start_time: isoDateTime,
  end_time: isoDateTime,
  organisation_id: z.string().optional(),
  method: z.enum(['POST', 'PUT', 'PATCH', 'DELETE', 'SYSTEM'], { error: 'must be POST, PUT, PATCH, DELETE or SYSTEM' }).optional(),
  uri: z.string().optional(),
  request_id: z.string().optional(),
  user_id: z.string().optional(),
  user_type: z.enum(['user', 'api_key', 'system', 'anonymous'], { error: 'must be user, api_key, system or anonymous' }).optional(),
  api_key_id: z.string().optional(),
  workspace_id: z.string().optional(),
  response_status_code: z.coerce
    .number({ error: 'must be an HTTP status code' })
    .int('must be an integer')
    .min(100, 'must be an HTTP status code')
    .max(599, 'must be an HTTP status code')
    .optional(),
  resource_type: z.string().optional(),
  resource_id: z.string().optional(),
  action: z.string().optional(),
  client_ip: z.string().optional(),
  outcome: z.enum(['pending', 'success', 'failure'], { error: 'must be pending, success or failure' }).optional(),
});

export type AuditQueryParams = z.output<typeof querySchema>;

/** The fields a filter compares for equality, in the order of the query. */
const EXACT: readonly (keyof AuditQueryParams & keyof AuditRecord)[] = [
  'method',
  'uri',
  'request_id',
  'user_id',
  'user_type',
  'api_key_id',
  'response_status_code',
  'resource_type',
  'resource_id',
  'action',
  'client_ip',
  'outcome',
];

/** The span a range given by one bound covers, as analytics' default. */
export const DEFAULT_SPAN_MS = 86_400_000;

export function parseAuditQuery(query: URLSearchParams, now: number): AuditQueryParams {
  const raw: Record<string, string> = {};
  for (const [k, v] of query) if (k !== 'current_page' && k !== 'page_size') raw[k] = v;
  // Naming neither bound is the last 24 hours, as analytics do; one bound is enough: the other is
  // 24 hours from it, the end at most now.
  if (raw.start_time === undefined && raw.end_time === undefined) {
    raw.end_time = new Date(now).toISOString();
    raw.start_time = new Date(now - DEFAULT_SPAN_MS).toISOString();
  } else if (raw.start_time !== undefined && raw.end_time === undefined) {
    const start = Date.parse(raw.start_time);
    if (!Number.isNaN(start)) raw.end_time = new Date(Math.min(start + DEFAULT_SPAN_MS, Math.max(now, start))).toISOString();
  } else if (raw.end_time !== undefined && raw.start_time === undefined) {
    const end = Date.parse(raw.end_time);
    if (!Number.isNaN(end)) raw.start_time = new Date(end - DEFAULT_SPAN_MS).toISOString();
  }
  const q = parseWith(querySchema, raw);
  const start = Date.parse(q.start_time);
  const end = Date.parse(q.end_time);
  if (end < start) throw ValidationError.field('end_time', 'must not be before start_time');
  if (end - start > MAX_RANGE_DAYS * 86_400_000) throw ValidationError.field('end_time', `must be at most ${MAX_RANGE_DAYS} days after start_time`);
  return q;
}

export class AuditLogService {
  readonly #deps: CoreDeps;
  constructor(deps: CoreDeps) {
    this.#deps = deps;
  }

  async list(caller: Principal, q: AuditQueryParams): Promise<AuditRecord[]> {
    if (q.organisation_id !== undefined && q.organisation_id !== caller.organisationId) {
      throw ValidationError.field('organisation_id', "must be the caller's organisation");
    }
    // Entries name a workspace as the request did (id or slug): match both.
    let names: ReadonlySet<string> | undefined;
    if (q.workspace_id !== undefined) {
      const ws = await this.#deps.repos.workspaces.resolve(caller.organisationId, q.workspace_id);
      names = new Set(ws ? [ws.id, ws.slug] : [q.workspace_id]);
    }
    const records = await new AuditRepository(this.#deps.repos.table).range({
      organisationId: caller.organisationId,
      start: new Date(Date.parse(q.start_time)).toISOString(),
      end: new Date(Date.parse(q.end_time)).toISOString(),
    });
    return records.filter(
      (r) => EXACT.every((f) => q[f] === undefined || r[f] === q[f]) && (names === undefined || (r.workspace_id !== null && names.has(r.workspace_id))),
    );
  }
}

export const auditView = (r: AuditRecord) => ({ object: 'audit-log' as const, ...r });
