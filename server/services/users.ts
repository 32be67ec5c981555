// Console users: creation with an argon2id password hash, lookup by email (case-insensitive).
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../ids.ts';
import { queryOne } from '../db/sql.ts';
import { hashPassword } from '../auth/passwords.ts';

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  email_verified_at: Date | null;
  created_at: Date;
}

export async function createUser(em: EntityManager, input: { email: string; password: string; verified: boolean }): Promise<UserRow> {
  const passwordHash = await hashPassword(input.password);
  return (await queryOne<UserRow>(
    em,
    `INSERT INTO users (id, email, password_hash, email_verified_at)
     VALUES ($1, lower($2), $3, CASE WHEN $4::boolean THEN now() END)
     RETURNING id, email, password_hash, email_verified_at, created_at`,
    [newId(), input.email, passwordHash, input.verified],
  ))!;
}

export async function findUserByEmail(em: EntityManager, email: string): Promise<UserRow | undefined> {
  return queryOne<UserRow>(em, `SELECT id, email, password_hash, email_verified_at, created_at FROM users WHERE lower(email) = lower($1)`, [email]);
}
