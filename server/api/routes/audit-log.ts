// The audit log of management writes (console admins and owners of the token's tenant).
import { defineRoute } from '../route.ts';
import { requireTenantRole } from '../auth-rules.ts';
import { AppError } from '../../base/errors.ts';
import { AuditListQuery, AuditPage } from '../../schemas/audit.ts';
import { listAudit } from '../../resources/audit-log.ts';

export const listAuditLog = defineRoute({
  method: 'GET',
  path: '/v1/audit-log',
  summary: "The tenant's audit log, newest first: who changed what, from where (secrets masked)",
  tag: 'audit',
  auth: 'user',
  query: AuditListQuery,
  responses: { 200: AuditPage },
  errors: [403],
  handler: ({ em, auth, query }) => {
    if (auth?.kind !== 'user')
      throw new AppError('wrong_credential_kind', 'The audit log is for console admins and owners');
    requireTenantRole(auth, 'admin');
    return listAudit(em, auth.tenantId, query);
  },
});
