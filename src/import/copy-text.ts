/** Encoding of values for COPY ... FROM STDIN in PostgreSQL's text format. */

const NEEDS_ESCAPE = /[\\\t\n\r]/;

export const COPY_NULL = '\\N';

export function copyText(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/[\\\t\n\r]/g, (char) =>
    char === '\\' ? '\\\\' : char === '\t' ? '\\t' : char === '\n' ? '\\n' : '\\r',
  );
}

export function copyTimestamp(value: Date | null): string {
  return value ? value.toISOString() : COPY_NULL;
}

export function copyNullable(value: number | null): string {
  return value === null ? COPY_NULL : String(value);
}

/** A text[] literal: every element quoted, so commas, braces and spaces need no further thought. */
export function copyTextArray(values: string[]): string {
  return copyText(`{${values.map((value) => `"${value.replace(/["\\]/g, '\\$&')}"`).join(',')}}`);
}
