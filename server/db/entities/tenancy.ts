// Entities of tenancy: tenants, users, memberships, brands, service keys. Foreign keys are plain id
// columns: services join explicitly, so no lazy loading hides a query.
import { defineEntity, p } from '@mikro-orm/core';

const timestamps = {
  createdAt: p.datetime().onCreate(() => new Date()),
  updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
};

export const TenantSchema = defineEntity({
  name: 'Tenant',
  tableName: 'tenants',
  properties: {
    id: p.uuid().primary(),
    name: p.text(),
    archivedAt: p.datetime().nullable(),
    ...timestamps,
  },
});
export class Tenant extends TenantSchema.class {}
TenantSchema.setClass(Tenant);

export const TenantLimitSchema = defineEntity({
  name: 'TenantLimit',
  tableName: 'tenant_limits',
  properties: {
    tenantId: p.uuid().primary(),
    name: p.text().primary(),
    value: p.double(),
  },
});
export class TenantLimit extends TenantLimitSchema.class {}
TenantLimitSchema.setClass(TenantLimit);

export const UserSchema = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.uuid().primary(),
    email: p.text(),
    passwordHash: p.text(),
    emailVerifiedAt: p.datetime().nullable(),
    ...timestamps,
  },
});
export class User extends UserSchema.class {}
UserSchema.setClass(User);

export const MembershipSchema = defineEntity({
  name: 'Membership',
  tableName: 'memberships',
  properties: {
    userId: p.uuid().primary(),
    tenantId: p.uuid().primary(),
    role: p.enum(['owner', 'admin'] as const),
    isDefault: p.boolean(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export class Membership extends MembershipSchema.class {}
MembershipSchema.setClass(Membership);

export const BrandSchema = defineEntity({
  name: 'Brand',
  tableName: 'brands',
  properties: {
    id: p.uuid().primary(),
    tenantId: p.uuid(),
    key: p.text(),
    values: p.json<Record<string, unknown>>(),
    sender: p.json<{ from_name?: string | null; from_email?: string | null; reply_to?: string | null }>(),
    isDefault: p.boolean(),
    ...timestamps,
  },
});
export class Brand extends BrandSchema.class {}
BrandSchema.setClass(Brand);

export const ApiKeySchema = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.uuid().primary(),
    tenantId: p.uuid(),
    name: p.text(),
    prefix: p.text(),
    keyHash: p.blob(),
    createdAt: p.datetime().onCreate(() => new Date()),
    lastUsedAt: p.datetime().nullable(),
    revokedAt: p.datetime().nullable(),
  },
});
export class ApiKey extends ApiKeySchema.class {}
ApiKeySchema.setClass(ApiKey);

export const tenancyEntities = [TenantSchema, TenantLimitSchema, UserSchema, MembershipSchema, BrandSchema, ApiKeySchema];
