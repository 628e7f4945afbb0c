import type { ServerResponse } from 'node:http';

const codes = new WeakMap<ServerResponse, string>();

/** Lets the request log name the contract error code a response carried, without parsing its body. */
export function recordErrorCode(response: ServerResponse, code: string): void {
  codes.set(response, code);
}

export function errorCodeOf(response: ServerResponse): string | undefined {
  return codes.get(response);
}
