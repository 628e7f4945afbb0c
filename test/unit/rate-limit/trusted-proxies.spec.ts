import { ConfigError, loadConfig } from '../../../src/core/config/app-config';
import { trustedProxyList } from '../../../src/core/config/trusted-proxies';

describe('TRUSTED_PROXIES', () => {
  it('accepts addresses, CIDR ranges and proxy-addr names, comma-separated', () => {
    const config = loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.10,loopback , fd00::/8' });
    expect(trustedProxyList(config.TRUSTED_PROXIES)).toEqual([
      '10.0.0.0/8',
      '192.0.2.10',
      'loopback',
      'fd00::/8',
    ]);
  });

  it('trusts no proxy when unset', () => {
    expect(trustedProxyList(loadConfig({}).TRUSTED_PROXIES)).toEqual([]);
  });

  it('refuses anything else at start-up, naming the variable but not echoing the value', () => {
    const load = () => loadConfig({ TRUSTED_PROXIES: '10.0.0.0/8, lb.internal.example' });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/TRUSTED_PROXIES/);
    expect(load).not.toThrow(/lb\.internal/);
  });

  it('reads the per-address budget, 6000 by default', () => {
    expect(loadConfig({}).RATE_LIMIT_PER_IP_PER_MINUTE).toBe(6000);
    expect(loadConfig({ RATE_LIMIT_PER_IP_PER_MINUTE: '30' }).RATE_LIMIT_PER_IP_PER_MINUTE).toBe(30);
    expect(() => loadConfig({ RATE_LIMIT_PER_IP_PER_MINUTE: '0' })).toThrow(/RATE_LIMIT_PER_IP_PER_MINUTE/);
  });
});
