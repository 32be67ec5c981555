// The list of entity schemas MikroORM knows. Each resource's entities file adds its list here.
import { tenancyEntities } from './tenancy.ts';

export const entities = [...tenancyEntities];
