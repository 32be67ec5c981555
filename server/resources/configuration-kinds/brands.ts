// Brands in configuration as code: values and sender; the default brand is updated, never pruned.
import type { BrandValues } from '../../schemas/brandings.ts';
import {
  createBrand,
  deleteBrand,
  listBrands,
  setBrandSender,
  setBrandValues,
  toBrandingResponse,
} from '../brandings.ts';
import type { ConfigurationKind } from './types.ts';

const senderOf = (sender: { from_name?: string | null; from_email?: string | null; reply_to?: string | null }) => ({
  from_name: sender.from_name ?? null,
  from_email: sender.from_email ?? null,
  reply_to: sender.reply_to ?? null,
});

export const brandsKind: ConfigurationKind<'brands'> = {
  name: 'brands',
  id: (entry) => entry.key,
  normalise: (entry) => ({ key: entry.key, values: entry.values, sender: senderOf(entry.sender) }),
  async read({ tx, tenantId }) {
    return (await listBrands(tx, tenantId)).map((row) => {
      const brand = toBrandingResponse(row, []);
      return { key: brand.key, values: brand.values as BrandValues, sender: brand.sender };
    });
  },
  async create({ tx, tenantId }, entry) {
    await createBrand(tx, tenantId, entry);
  },
  async update({ tx, tenantId }, _current, desired, fields) {
    if (fields.includes('values')) await setBrandValues(tx, tenantId, desired.key, desired.values);
    if (fields.includes('sender')) await setBrandSender(tx, tenantId, desired.key, desired.sender);
  },
  async remove({ tx, tenantId }, current) {
    await deleteBrand(tx, tenantId, current.key);
  },
  prunable: (entry, ctx) => entry.key !== ctx.defaultBrandKey,
};
