// Every migration, in order. Migrations are ordered data: a new one is appended here, never inserted.
import type { MigrationObject } from '@mikro-orm/core';
import { Foundation } from './0001-foundation.ts';

export const migrations: MigrationObject[] = [{ name: '0001-foundation', class: Foundation }];
