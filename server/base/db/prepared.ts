// Every parameterised statement Herald and its job queue send (queue.ts) runs as a named prepared
// statement of its connection.
// Without a name, PostgreSQL parses, analyses and plans the statement text on every call, which on
// the trigger and delivery paths is a large share of the database's CPU.
// Named, it is parsed once per connection, and its plan is cached once PostgreSQL judges a generic
// plan as good as a custom one (plan_cache_mode = auto). Statements over a batch are the exception
// (planEachCall).
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

const plannedEachCall = new Set<string>();

/**
 * Has `text` run unnamed, so that PostgreSQL plans it with each call's values, and returns it. For a
 * statement over a batch (an array of hundreds of ids): a named statement's generic plan is made with
 * the table sizes of that moment and kept until the table is next analysed. Made while a table is
 * young (a fresh install's first broadcast), it reads the whole table on every call while the table
 * grows by thousands of rows a second, for up to a minute before autovacuum analyses it. Planning once
 * per batch costs little beside what the batch costs.
 */
export function planEachCall(text: string): string {
  plannedEachCall.add(text);
  return text;
}

/**
 * Makes `client.query(text, values)` with values use a named statement (name = hash of the text).
 * A text without values runs unnamed: pg-boss inlines values into such texts (its fetch inlines the
 * queue and the batch size), and a parameterless statement has one plan, made on its first call: the
 * fetch's, made while the job table is young, walks the whole table to find the few jobs it takes.
 */
export function prepareStatementsOf(client: pg.Client): void {
  const send = client.query.bind(client) as QueryFn;
  const names = new Map<string, string>();
  (client as unknown as { query: QueryFn }).query = (...args: unknown[]) => {
    const [text, values, callback] = args;
    if (typeof text !== 'string' || !Array.isArray(values) || values.length === 0 || plannedEachCall.has(text))
      return send(...args);
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_PREPARED_PER_CONNECTION) return send(...args);
      name = `h_${createHash('sha1').update(text).digest('base64url')}`;
      names.set(text, name);
    }
    return callback === undefined ? send({ name, text, values }) : send({ name, text, values }, callback);
  };
}
