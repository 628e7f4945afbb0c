/**
 * A mistake in how a command was called: printed without a stack, with the command's usage line,
 * exit code 2. Kept in a module of its own, free of imports, so `--help` and a refused flag are
 * answered before anything heavy loads.
 */
export class UsageError extends Error {}
