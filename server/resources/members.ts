// Members of a tenant: list, change role, remove. Admin or higher may act; only owners may change or
// remove owners; nobody changes or removes their own membership here; the owner role is never assigned
// by a role change (ownership is created with the tenant).
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, invalidField } from '../base/errors.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import { requireMembership, type MemberRole } from './tenants.ts';

export interface MemberResponseBody {
  user_id: string;
  email: string;
  role: MemberRole;
}

const LIST_MEMBERS = `SELECT u.id AS user_id, u.email, m.role FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.tenant_id = $1 ORDER BY m.created_at, u.email`;

const LOCK_MEMBER = `SELECT u.id AS user_id, u.email, m.role, m.is_default FROM memberships m
      JOIN users u ON u.id = m.user_id
      WHERE m.tenant_id = $1 AND m.user_id = $2 FOR UPDATE OF m`;

const SET_MEMBER_ROLE = `UPDATE memberships SET role = $3 WHERE tenant_id = $1 AND user_id = $2`;

const DELETE_MEMBERSHIP = `DELETE FROM memberships WHERE tenant_id = $1 AND user_id = $2`;

const REASSIGN_DEFAULT = `UPDATE memberships SET is_default = true
      WHERE user_id = $1 AND NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = $1 AND is_default)
        AND tenant_id = (SELECT tenant_id FROM memberships WHERE user_id = $1 ORDER BY created_at, tenant_id LIMIT 1)`;

export async function listMembers(
  em: EntityManager,
  callerId: string,
  tenantId: string,
): Promise<MemberResponseBody[]> {
  await requireMembership(em, callerId, tenantId, 'admin');
  return query<MemberResponseBody>(em, LIST_MEMBERS, [tenantId]);
}

/** Checks shared by change and removal; returns the target's current membership (locked). */
async function targetMembership(
  tx: EntityManager,
  callerId: string,
  tenantId: string,
  userId: string,
  verb: string,
): Promise<MemberResponseBody & { is_default: boolean }> {
  const callerRole = await requireMembership(tx, callerId, tenantId, 'admin');
  const target = await queryOne<MemberResponseBody & { is_default: boolean }>(tx, LOCK_MEMBER, [tenantId, userId]);
  if (!target) throw new AppError('not_found', 'Member not found');
  if (userId === callerId) throw new AppError('own_membership', `You cannot ${verb} your own membership`);
  if (target.role === 'owner' && callerRole !== 'owner')
    throw new AppError('insufficient_role', `Only an owner can ${verb} an owner`);
  return target;
}

export async function changeMemberRole(
  em: EntityManager,
  callerId: string,
  tenantId: string,
  userId: string,
  role: MemberRole,
): Promise<MemberResponseBody> {
  return em.transactional(async (tx) => {
    await requireMembership(tx, callerId, tenantId, 'admin');
    if (role === 'owner')
      throw invalidField(['body', 'role'], 'the owner role cannot be assigned by a role change', 'role_not_assignable');
    const target = await targetMembership(tx, callerId, tenantId, userId, 'change');
    await execute(tx, SET_MEMBER_ROLE, [tenantId, userId, role]);
    return { user_id: target.user_id, email: target.email, role };
  });
}

/**
 * Removes a membership. When it was the user's default tenant, their oldest remaining membership
 * becomes the default (a user left with none has no tenant to sign in to until invited again).
 */
export async function removeMember(
  em: EntityManager,
  callerId: string,
  tenantId: string,
  userId: string,
): Promise<void> {
  await em.transactional(async (tx) => {
    const target = await targetMembership(tx, callerId, tenantId, userId, 'remove');
    await execute(tx, DELETE_MEMBERSHIP, [tenantId, userId]);
    if (target.is_default) await reassignDefault(tx, userId);
  });
}

export async function reassignDefault(tx: EntityManager, userId: string): Promise<void> {
  await execute(tx, REASSIGN_DEFAULT, [userId]);
}
