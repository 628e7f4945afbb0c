import { createHash } from 'node:crypto';

/**
 * One database object whose current text lives in this repository rather than in a migration: a
 * function or a trigger, written once as the statement that creates or replaces it. `gpucap migrate`
 * applies every definition after the versioned migrations (apply-definitions.ts); changing a body
 * means editing its file.
 */
export interface Definition {
  readonly kind: 'function' | 'trigger';
  /** A function's name, or a trigger's `table.trigger`: what the applier records and drops by. */
  readonly key: string;
  readonly sql: string;
  /** sha256 of the statement: a changed text is what makes a definition stale. */
  readonly digest: string;
}

const FUNCTION_NAME = /^\s*CREATE OR REPLACE FUNCTION ([a-z_][a-z0-9_]*)\(/;
const TRIGGER_NAME = /^\s*CREATE OR REPLACE TRIGGER ([a-z_][a-z0-9_]*) .*? ON ([a-z_][a-z0-9_]*) /s;

/** A `CREATE OR REPLACE FUNCTION` statement; functions are not overloaded, so the name identifies it. */
export function defineFunction(sql: string): Definition {
  const name = FUNCTION_NAME.exec(sql)?.[1];
  if (!name) throw new Error('A function definition must start with CREATE OR REPLACE FUNCTION name(');
  return define('function', name, sql);
}

/** A `CREATE OR REPLACE TRIGGER` statement. */
export function defineTrigger(sql: string): Definition {
  const match = TRIGGER_NAME.exec(sql);
  if (!match)
    throw new Error('A trigger definition must start with CREATE OR REPLACE TRIGGER name ... ON table');
  return define('trigger', `${match[2]}.${match[1]}`, sql);
}

function define(kind: Definition['kind'], key: string, sql: string): Definition {
  const text = sql.trim();
  return { kind, key, sql: text, digest: createHash('sha256').update(text).digest('hex') };
}
