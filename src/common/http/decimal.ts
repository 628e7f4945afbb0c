/** Contract §1: non-integer numbers carry at most 4 decimal places (and never read as -0). */
export function round4(value: number): number {
  const rounded = Math.round(value * 10_000) / 10_000;
  return rounded === 0 ? 0 : rounded;
}

/** `round4` for figures that are null when there is nothing to measure. */
export function round4OrNull(value: number | null): number | null {
  return value === null ? null : round4(value);
}
