// Invitations: an admin (or owner) invites an address to join a tenant as admin; the emailed link
// lets a new person create their (verified) account, or a signed-in user with that address join.
// Tokens are stored hashed; the invitation email is sent by a job enqueued in the creating
// transaction (UserInvited happens after commit).
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError, invalidField } from '../base/errors.ts';
import { newId } from '../base/ids.ts';
import { execute, query, queryOne } from '../base/db/sql.ts';
import type { Context } from '../base/context.ts';
import { hashLinkToken, newLinkToken } from '../base/auth/link-tokens.ts';
import { hashPassword } from '../base/auth/passwords.ts';
import { enqueueSystemEmail } from '../channels/email/system-email-queue.ts';
import { requireMembership, type MemberRole } from './tenants.ts';
import type { AccessTokenBody } from './auth.ts';
import { sessionTokenFor } from './mfa.ts';
import { toIsoTimestamp } from '../base/timestamps.ts';

export interface InvitationResponseBody {
  id: string;
  email: string;
  role: MemberRole;
  status: 'pending' | 'accepted' | 'revoked';
  expires_at: string;
  created_at: string;
}

interface InvitationRow {
  id: string;
  tenant_id: string;
  email: string;
  role: MemberRole;
  status: 'pending' | 'accepted' | 'revoked';
  expires_at: Date;
  created_at: Date;
}

const COLUMNS = 'id, tenant_id, email, role, status, expires_at, created_at';

const LOCK_TENANT = `SELECT name FROM tenants WHERE id = $1 FOR UPDATE`;

const FIND_MEMBER_BY_EMAIL = `SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id
  WHERE m.tenant_id = $1 AND lower(u.email) = lower($2)`;

const FIND_LIVE_INVITATION = `SELECT 1 FROM invitations
  WHERE tenant_id = $1 AND lower(email) = lower($2) AND status = 'pending' AND expires_at > $3`;

const INSERT_INVITATION = `INSERT INTO invitations
       (id, tenant_id, email, role, token_hash, expires_at, invited_by, created_at)
       VALUES ($1, $2, lower($3), $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`;

const FIND_USER_EMAIL = `SELECT email FROM users WHERE id = $1`;

const LIST_PENDING_INVITATIONS = `SELECT ${COLUMNS} FROM invitations WHERE tenant_id = $1 AND status = 'pending'
  ORDER BY created_at, id`;

const LOCK_INVITATION = `SELECT ${COLUMNS} FROM invitations WHERE id = $1 AND tenant_id = $2 FOR UPDATE`;

const REVOKE_INVITATION = `UPDATE invitations SET status = 'revoked' WHERE id = $1`;

/** The invitation with a token hash, and its tenant's name; `lock` locks the invitation row. */
function invitationByTokenSql(lock: boolean): string {
  return `SELECT i.id, i.tenant_id, i.email, i.role, i.status, i.expires_at, i.created_at, t.name AS tenant_name
       FROM invitations i JOIN tenants t ON t.id = i.tenant_id
       WHERE i.token_hash = $1 ${lock ? 'FOR UPDATE OF i' : ''}`;
}

const FIND_USER_BY_EMAIL = `SELECT 1 FROM users WHERE lower(email) = lower($1)`;

const INSERT_VERIFIED_USER = `INSERT INTO users (id, email, password_hash, email_verified_at)
       VALUES ($1, lower($2), $3, $4)
       ON CONFLICT (lower(email)) DO NOTHING RETURNING id`;

const INSERT_DEFAULT_MEMBERSHIP = `INSERT INTO memberships (user_id, tenant_id, role, is_default)
  VALUES ($1, $2, $3, true)`;

const MARK_INVITATION_ACCEPTED = `UPDATE invitations SET status = 'accepted', accepted_at = $2 WHERE id = $1`;

const ADD_MEMBERSHIP = `INSERT INTO memberships (user_id, tenant_id, role, is_default)
       VALUES ($1, $2, $3, NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = $1)) ON CONFLICT DO NOTHING`;

const MARK_EMAIL_VERIFIED = `UPDATE users SET email_verified_at = coalesce(email_verified_at, $2) WHERE id = $1`;

function toInvitationResponse(row: InvitationRow): InvitationResponseBody {
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    status: row.status,
    expires_at: toIsoTimestamp(row.expires_at),
    created_at: toIsoTimestamp(row.created_at),
  };
}

export async function inviteMember(
  runtime: Context,
  em: EntityManager,
  callerId: string,
  tenantId: string,
  input: { email: string; role: MemberRole },
): Promise<InvitationResponseBody> {
  return em.transactional(async (tx) => {
    await requireMembership(tx, callerId, tenantId, 'admin');
    if (input.role === 'owner')
      throw invalidField(['body', 'role'], 'the owner role cannot be given by an invitation', 'role_not_assignable');
    // Serialises invitations of one tenant, so two concurrent invites of one address cannot both pass.
    const tenant = (await queryOne<{ name: string }>(tx, LOCK_TENANT, [tenantId]))!;
    const member = await queryOne(tx, FIND_MEMBER_BY_EMAIL, [tenantId, input.email]);
    if (member) throw new AppError('already_member', 'This address already belongs to a member of the tenant');
    const now = new Date(runtime.clock.now());
    const live = await queryOne(tx, FIND_LIVE_INVITATION, [tenantId, input.email, now]);
    if (live) throw new AppError('invitation_pending', 'A pending invitation for this address already exists');
    const link = newLinkToken();
    const row = (await queryOne<InvitationRow>(tx, INSERT_INVITATION, [
      newId(),
      tenantId,
      input.email,
      input.role,
      link.hash,
      new Date(now.getTime() + runtime.config.invitationTtlSeconds * 1000),
      callerId,
      now,
    ]))!;
    const inviter = await queryOne<{ email: string }>(tx, FIND_USER_EMAIL, [callerId]);
    // UserInvited: the email job commits with the invitation, so it is sent only once the invite exists.
    await enqueueSystemEmail(runtime, tx, {
      kind: 'invitation',
      to: row.email,
      token: link.token,
      tenantName: tenant.name,
      inviterEmail: inviter?.email ?? null,
      role: row.role,
    });
    return toInvitationResponse(row);
  });
}

/** Pending invitations (including ones past their expiry, which the console shows as expired and can revoke). */
export async function listPendingInvitations(
  em: EntityManager,
  callerId: string,
  tenantId: string,
): Promise<InvitationResponseBody[]> {
  await requireMembership(em, callerId, tenantId, 'admin');
  const rows = await query<InvitationRow>(em, LIST_PENDING_INVITATIONS, [tenantId]);
  return rows.map(toInvitationResponse);
}

export async function revokeInvitation(
  em: EntityManager,
  callerId: string,
  tenantId: string,
  invitationId: string,
): Promise<void> {
  await em.transactional(async (tx) => {
    await requireMembership(tx, callerId, tenantId, 'admin');
    const row = await queryOne<InvitationRow>(tx, LOCK_INVITATION, [invitationId, tenantId]);
    if (!row) throw new AppError('not_found', 'Invitation not found');
    if (row.status !== 'pending')
      throw new AppError('invitation_not_pending', `This invitation is already ${row.status}`);
    await execute(tx, REVOKE_INVITATION, [invitationId]);
  });
}

async function invitationByToken(
  tx: EntityManager,
  token: string,
  lock: boolean,
): Promise<(InvitationRow & { tenant_name: string }) | undefined> {
  return queryOne<InvitationRow & { tenant_name: string }>(tx, invitationByTokenSql(lock), [hashLinkToken(token)]);
}

/** Only a pending, unexpired invitation previews; spent, revoked, expired and unknown tokens are all 404. */
export async function previewInvitation(
  runtime: Context,
  em: EntityManager,
  token: string,
): Promise<{ email: string; role: MemberRole; tenant_name: string; user_exists: boolean }> {
  const row = await invitationByToken(em, token, false);
  if (!row || row.status !== 'pending' || new Date(row.expires_at).getTime() <= runtime.clock.now())
    throw new AppError('not_found', 'Invitation not found');
  const user = await queryOne(em, FIND_USER_BY_EMAIL, [row.email]);
  return { email: row.email, role: row.role, tenant_name: row.tenant_name, user_exists: user !== undefined };
}

/** 404 unknown, 409 spent or revoked, 422 expired. */
function assertUsable(runtime: Context, row: InvitationRow | undefined): asserts row is InvitationRow {
  if (!row) throw new AppError('not_found', 'Invitation not found');
  if (row.status !== 'pending')
    throw new AppError('invitation_not_pending', `This invitation was already ${row.status}`);
  if (new Date(row.expires_at).getTime() <= runtime.clock.now())
    throw new AppError('link_expired', 'This invitation has expired; ask for a new one');
}

/**
 * A new person accepts: their user is created verified (the link proves the mailbox) with the
 * invitation's membership as their default tenant, and they are signed in to it.
 */
export async function acceptInvitation(
  runtime: Context,
  em: EntityManager,
  token: string,
  password: string,
): Promise<AccessTokenBody> {
  const passwordHash = await hashPassword(password);
  return em.transactional(async (tx) => {
    const row = await invitationByToken(tx, token, true);
    assertUsable(runtime, row);
    const now = new Date(runtime.clock.now());
    const user = await queryOne<{ id: string }>(tx, INSERT_VERIFIED_USER, [newId(), row.email, passwordHash, now]);
    if (!user)
      throw new AppError(
        'user_exists',
        'An account already exists for this address: sign in and accept the invitation',
      );
    await execute(tx, INSERT_DEFAULT_MEMBERSHIP, [user.id, row.tenant_id, row.role]);
    await execute(tx, MARK_INVITATION_ACCEPTED, [row.id, now]);
    return sessionTokenFor(runtime, tx, user.id, row.tenant_id);
  });
}

/**
 * A signed-in user accepts an invitation sent to their own address: the membership is added (not made
 * their default, unless they have no other) and the answer is a token for the joined tenant.
 */
export async function acceptInvitationAsUser(
  runtime: Context,
  em: EntityManager,
  userId: string,
  token: string,
): Promise<AccessTokenBody> {
  return em.transactional(async (tx) => {
    const row = await invitationByToken(tx, token, true);
    if (!row) throw new AppError('not_found', 'Invitation not found');
    const user = (await queryOne<{ email: string }>(tx, FIND_USER_EMAIL, [userId]))!;
    if (user.email.toLowerCase() !== row.email.toLowerCase())
      throw new AppError('invitation_email_mismatch', 'This invitation was sent to a different email address');
    assertUsable(runtime, row);
    const added = await execute(tx, ADD_MEMBERSHIP, [userId, row.tenant_id, row.role]);
    if (added === 0) throw new AppError('already_member', 'You are already a member of this tenant');
    // Holding the emailed token proves the mailbox.
    await execute(tx, MARK_EMAIL_VERIFIED, [userId, new Date(runtime.clock.now())]);
    await execute(tx, MARK_INVITATION_ACCEPTED, [row.id, new Date(runtime.clock.now())]);
    return sessionTokenFor(runtime, tx, userId, row.tenant_id);
  });
}
