import type { AuthScope } from '../auth/auth-scope';

/**
 * The parameters of one statement, bound while its text is written: each value added gets the next
 * placeholder, which the text names, so no builder counts positions. The caller's organization is
 * bound first, as every statement of ScopedDatabase must take it (scoped-statement.ts). A builder
 * whose statement is prepared adds the same values in the same order on every call, so its text
 * stays fixed.
 */
export class StatementParameters {
  readonly values: unknown[] = [];
  /** The placeholder of the caller's organization. */
  readonly organization: string;

  constructor(scope: AuthScope) {
    this.organization = this.add(scope.organizationId);
  }

  /** Binds `value` and returns its placeholder. */
  add(value: unknown): string {
    return `$${this.values.push(value)}`;
  }
}
