import proxyaddr from 'proxy-addr';

/** TRUSTED_PROXIES as a list: addresses, CIDR ranges, or proxy-addr's names (loopback, uniquelocal, …). */
export function trustedProxyList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}

export function isValidTrustedProxyList(value: string): boolean {
  try {
    proxyaddr.compile(trustedProxyList(value));
    return true;
  } catch {
    return false;
  }
}
