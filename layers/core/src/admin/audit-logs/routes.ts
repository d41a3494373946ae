/** `/v1/audit-logs` (owners and admins; off with AUDIT_LOGS_ENABLED=OFF). */
import { page, parsePaging } from '../pagination.ts';
import type { AdminRoute } from '../route.ts';
import { AuditLogService, auditView, parseAuditQuery } from './service.ts';

export const auditLogRoutes: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/v1/audit-logs',
    scope: 'audit_logs.list',
    feature: 'auditLogs',
    handler: async (ctx) => {
      const paging = parsePaging(ctx.query);
      const records = await new AuditLogService(ctx.deps).list(ctx.principal, parseAuditQuery(ctx.query, ctx.deps.clock.now()));
      return page(records.map(auditView), paging);
    },
  },
];
