// Topics in configuration as code: the definition (key and name) only. Subscriptions are data, not
// configuration: never exported, kept by an update; a pruned topic goes with its subscriptions.
import { createTopic, deleteTopic, listTopics, renameTopic } from '../topics.ts';
import type { ConfigurationKind } from './types.ts';

export const topicsKind: ConfigurationKind<'topics'> = {
  name: 'topics',
  id: (entry) => entry.key,
  normalise: (entry) => ({ key: entry.key, name: entry.name }),
  async read({ tx, tenantId }) {
    return (await listTopics(tx, tenantId)).map((topic) => ({ key: topic.key, name: topic.name }));
  },
  async create({ tx, tenantId }, entry) {
    await createTopic(tx, tenantId, entry);
  },
  async update({ tx, tenantId }, _current, desired) {
    await renameTopic(tx, tenantId, desired.key, desired.name);
  },
  async remove({ tx, tenantId }, current) {
    await deleteTopic(tx, tenantId, current.key);
  },
};
