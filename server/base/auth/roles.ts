// Tenant roles and their order: where "admin or higher" is required, an owner also passes.
export type MemberRole = 'owner' | 'admin';

const RANK: Record<MemberRole, number> = { admin: 1, owner: 2 };

export function roleAtLeast(role: MemberRole, minimum: MemberRole): boolean {
  return RANK[role] >= RANK[minimum];
}
