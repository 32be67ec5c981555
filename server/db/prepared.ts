// Every parameterised statement Herald sends, and every statement of the job queue's that repeats
// (queue.ts), runs as a named prepared statement of its connection.
// Without a name, PostgreSQL parses, analyses and plans the statement text on every call, which on
// the trigger and delivery paths is a large share of the database's CPU.
// Named, it is parsed once per connection, and its plan is cached once PostgreSQL judges a generic
// plan as good as a custom one (plan_cache_mode = auto).
import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Statements prepared per connection at most. Herald's statement texts are fixed strings, and
 * pg-boss's inline at most a queue name (Herald has a handful of queues), so the cap is not reached
 * in practice; it only bounds memory if some caller built texts dynamically. Past it, new texts run
 * unnamed.
 */
const MAX_PREPARED_PER_CONNECTION = 500;

type QueryFn = (...args: unknown[]) => unknown;

/**
 * Parameterless texts seen once, per connection, at most; past it the record starts over. Bounds the
 * memory of the `emptyValues` rule below whatever texts a caller builds.
 */
const MAX_PARAMETERLESS_SEEN = 200;

/**
 * Makes `client.query(text, values)` with values use a named statement (name = hash of the text).
 *
 * `emptyValues`: also name statements given an empty values array, from the second time the same text
 * is sent, if it holds no ';' (so it is one statement). pg-boss passes an empty array both with
 * statements that inline their values (the fetch: the queue name and batch size, the same hundreds of
 * times a second under load) and with supervision's, which inline the queues due at that moment or are
 * several statements, which cannot be prepared. Only a text that repeats is worth a prepared statement.
 */
export function prepareStatementsOf(client: pg.Client, options: { emptyValues?: boolean } = {}): void {
  const send = client.query.bind(client) as QueryFn;
  const names = new Map<string, string>();
  const seenOnce = new Set<string>();
  (client as unknown as { query: QueryFn }).query = (...args: unknown[]) => {
    const [text, values, callback] = args;
    if (typeof text !== 'string' || !Array.isArray(values)) return send(...args);
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_PREPARED_PER_CONNECTION) return send(...args);
      if (values.length === 0) {
        if (!options.emptyValues || text.includes(';')) return send(...args);
        if (!seenOnce.has(text)) {
          if (seenOnce.size >= MAX_PARAMETERLESS_SEEN) seenOnce.clear();
          seenOnce.add(text);
          return send(...args);
        }
        seenOnce.delete(text);
      }
      name = `h_${createHash('sha1').update(text).digest('base64url')}`;
      names.set(text, name);
    }
    return callback === undefined ? send({ name, text, values }) : send({ name, text, values }, callback);
  };
}
