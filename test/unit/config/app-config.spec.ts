import { generateKeyPairSync } from 'node:crypto';
import { ConfigError, loadConfig } from '../../../src/core/config/app-config';

describe('loadConfig', () => {
  it('applies the contract defaults', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.RATE_LIMIT_PER_MINUTE).toBe(1200);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.DATABASE_URL).toBeUndefined();
  });

  it('reads typed values', () => {
    const config = loadConfig({ PORT: '8080', RATE_LIMIT_PER_MINUTE: '10', LOG_LEVEL: 'debug' });
    expect(config).toMatchObject({ PORT: 8080, RATE_LIMIT_PER_MINUTE: 10, LOG_LEVEL: 'debug' });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['RATE_LIMIT_PER_MINUTE', '0'],
    ['RATE_LIMIT_PER_MINUTE', '1.5'],
    ['LOG_LEVEL', 'loud'],
    ['JWT_JWKS_URI', 'not a url'],
    ['REDIS_URL', 'http://cache'],
    ['DATABASE_URL', 'postgres://user:pw@db:notaport/gpucap'],
    ['DATABASE_URL', 'mysql://db/gpucap'],
    ['DATABASE_URL', 'db.internal:5432'],
    ['JWT_PUBLIC_KEY', 'not a key'],
  ])('stops on a bad %s naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`\\b${name}\\b`));
  });

  it('accepts a PostgreSQL URL and a PEM public key, with newlines written as \\n', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString().replace(/\n/g, '\\n');
    const config = loadConfig({ DATABASE_URL: 'postgresql://user:pw@db:5432/gpucap', JWT_PUBLIC_KEY: pem });
    expect(config.DATABASE_URL).toBe('postgresql://user:pw@db:5432/gpucap');
    expect(config.JWT_PUBLIC_KEY).toBe(pem);
  });

  it('refuses more than one JWT key source', () => {
    expect(() => loadConfig({ JWT_SECRET: 's', JWT_PUBLIC_KEY: 'k' })).toThrow(/at most one/);
  });

  it('never puts a secret value in its message', () => {
    try {
      loadConfig({ JWT_SECRET: 'super-secret-value', JWT_JWKS_URI: 'https://idp.example/jwks' });
    } catch (error) {
      expect((error as Error).message).not.toContain('super-secret-value');
    }
  });
});
