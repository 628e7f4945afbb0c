/** Identifiers (contract §4): 1 to 128 characters of [A-Za-z0-9._:-], in paths, headers, filters and imports. */
export const IDENTIFIER_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;
export const IDENTIFIER_ISSUE = 'must be 1 to 128 characters from A-Z a-z 0-9 . _ : -';

/** Identifiers are ASCII; order them by code point, as the SQL does with COLLATE "C". */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
