// Console users: creation with an argon2id password hash, lookup by email (case-insensitive), and the
// local admin operations of `herald users`.
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../base/ids.ts';
import { query, queryOne } from '../base/db/sql.ts';
import { AppError } from '../base/errors.ts';
import { hashPassword } from '../base/auth/passwords.ts';

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  email_verified_at: Date | null;
  created_at: Date;
}

const INSERT_USER = `INSERT INTO users (id, email, password_hash, email_verified_at)
     VALUES ($1, lower($2), $3, CASE WHEN $4::boolean THEN now() END)
     RETURNING id, email, password_hash, email_verified_at, created_at`;

const FIND_USER_BY_EMAIL = `SELECT id, email, password_hash, email_verified_at, created_at FROM users
  WHERE lower(email) = lower($1)`;

const LIST_USERS = `SELECT u.id, u.email, u.email_verified_at IS NOT NULL AS email_verified,
       count(m.tenant_id)::int AS tenants, u.created_at
       FROM users u LEFT JOIN memberships m ON m.user_id = u.id GROUP BY u.id ORDER BY u.created_at, u.id`;

const SET_PASSWORD = `UPDATE users SET password_hash = $2, updated_at = now() WHERE lower(email) = lower($1)
     RETURNING id, email, password_hash, email_verified_at, created_at`;

const MARK_VERIFIED = `UPDATE users SET email_verified_at = coalesce(email_verified_at, now()), updated_at = now()
     WHERE lower(email) = lower($1)
     RETURNING id, email, password_hash, email_verified_at, created_at`;

const INSERT_DEFAULT_MEMBERSHIP = `INSERT INTO memberships (user_id, tenant_id, role, is_default)
  VALUES ($1, $2, $3, true)`;

export async function createUser(
  em: EntityManager,
  input: { email: string; password: string; verified: boolean },
): Promise<UserRow> {
  const passwordHash = await hashPassword(input.password);
  return (await queryOne<UserRow>(em, INSERT_USER, [newId(), input.email, passwordHash, input.verified]))!;
}

export async function findUserByEmail(em: EntityManager, email: string): Promise<UserRow | undefined> {
  return queryOne<UserRow>(em, FIND_USER_BY_EMAIL, [email]);
}

// ---- Local admin operations (herald users ...) ----

export interface UserListRow {
  id: string;
  email: string;
  email_verified: boolean;
  tenants: number;
  created_at: Date;
}

export async function listUsers(em: EntityManager): Promise<UserListRow[]> {
  return query<UserListRow>(em, LIST_USERS);
}

/** Sets a user's password (argon2id); 404 when no user has that email. Issued access tokens stay valid. */
export async function setUserPassword(em: EntityManager, email: string, password: string): Promise<UserRow> {
  const passwordHash = await hashPassword(password);
  const row = await queryOne<UserRow>(em, SET_PASSWORD, [email, passwordHash]);
  if (!row) throw new AppError('not_found', `No user with email ${email}`);
  return row;
}

export async function markUserVerified(em: EntityManager, email: string): Promise<UserRow> {
  const row = await queryOne<UserRow>(em, MARK_VERIFIED, [email]);
  if (!row) throw new AppError('not_found', `No user with email ${email}`);
  return row;
}

/** Adds a user who has no tenant yet to one, as their default tenant (herald users create --tenant). */
export async function addFirstMembership(
  em: EntityManager,
  userId: string,
  tenantId: string,
  role: 'owner' | 'admin',
): Promise<void> {
  await query(em, INSERT_DEFAULT_MEMBERSHIP, [userId, tenantId, role]);
}
