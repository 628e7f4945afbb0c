import { createPublicKey } from 'node:crypto';
import { plainToInstance, Transform, Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUrl, Max, Min, validateSync } from 'class-validator';
import { isValidTrustedProxyList } from './trusted-proxies';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * The whole configuration, read from the environment once and validated at start-up.
 * Error messages name variables and rules, never values, so secrets cannot leak through them.
 */
export class AppConfig {
  @IsOptional()
  @IsString()
  DATABASE_URL?: string;

  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  @IsString()
  HOST = '0.0.0.0';

  @IsOptional()
  @IsString()
  JWT_SECRET?: string;

  @IsOptional()
  @IsString()
  JWT_PUBLIC_KEY?: string;

  /** Signs page tokens (tamper evidence); every replica must share it. Unset: a random key per process. */
  @IsOptional()
  @IsString()
  CURSOR_SECRET?: string;

  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  JWT_JWKS_URI?: string;

  @IsOptional()
  @IsString()
  JWT_ISSUER?: string;

  @IsOptional()
  @IsString()
  JWT_AUDIENCE?: string;

  @Type(() => Number)
  @IsInt()
  @Min(1)
  RATE_LIMIT_PER_MINUTE = 1200;

  /** Spent before authentication, so unauthenticated floods never reach the database. */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  RATE_LIMIT_PER_IP_PER_MINUTE = 6000;

  /** Proxies whose X-Forwarded-For is believed (comma-separated addresses or CIDRs); unset: none. */
  @IsOptional()
  @IsString()
  TRUSTED_PROXIES?: string;

  @IsIn(LOG_LEVELS)
  LOG_LEVEL: (typeof LOG_LEVELS)[number] = 'info';

  @IsOptional()
  @IsUrl({ require_tld: false, protocols: ['redis', 'rediss'] })
  REDIS_URL?: string;

  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  DATABASE_POOL_SIZE = 20;

  /**
   * PostgreSQL streaming replicas the HTTP service reads from (comma-separated URLs); the primary
   * (DATABASE_URL) keeps every write and every credential read.
   */
  @IsOptional()
  @IsString()
  DATABASE_READ_URLS?: string;

  /** A replica further behind the primary than this is not read until it catches up. */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(3600)
  READ_REPLICA_MAX_LAG_SECONDS = 10;

  /**
   * Statistics and capacity reads computing at once per replica; more wait their turn in
   * arrival order (AggregateReadGate). Their statements are CPU-bound in PostgreSQL: about the
   * database server's cores divided among the replicas.
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(500)
  AGGREGATE_READ_CONCURRENCY = 4;

  /**
   * Server-side limit per request statement; the client gives up a little later if the server is
   * silent. Every read statement is designed to run in well under a second at 1M workloads: one
   * still running after 10 s is waiting on a lock or a starved server, and a 503 to retry serves
   * a dashboard better than a longer wait.
   */
  @Type(() => Number)
  @IsInt()
  @Min(100)
  DATABASE_STATEMENT_TIMEOUT_MS = 10_000;

  /** `false` for replicas when a separate `gpucap migrate` step owns the schema (same as `serve --no-migrate`). */
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'MIGRATE_ON_START must be true or false' })
  MIGRATE_ON_START = true;

  /**
   * How long an answer stays valid while its organization's data is unchanged: the bound on how far
   * clock-driven figures (running workloads, burn rates) lag. 0 turns the response cache off.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  @Max(3600)
  RESPONSE_CACHE_TTL_SECONDS = 10;

  /**
   * Memory the response cache may hold (JSON bytes); least recently used answers go first. V8 sizes
   * its heap to a multiple of what stays live, so the peak RSS grows several times faster than this
   * (docs/benchmarks.md, "Response cache memory"). 8 MiB still holds a few hundred dashboard answers.
   */
  @Type(() => Number)
  @IsInt()
  @Min(0)
  RESPONSE_CACHE_MAX_BYTES = 8 * 1024 * 1024;

  /**
   * How long an idle keep-alive connection is kept open. Above a load balancer's own idle timeout
   * (60 s on AWS ALB, the default of most), so the balancer always closes first: a connection the
   * service closed while the balancer reused it would be answered 502.
   */
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(3600)
  HTTP_KEEP_ALIVE_TIMEOUT_SECONDS = 65;

  /** Bearer token `/metrics` requires; unset: `/metrics` is open (keep it off the public network). */
  @IsOptional()
  @IsString()
  METRICS_TOKEN?: string;

  /** Port of the embedded PostgreSQL used when DATABASE_URL is unset. */
  @Type(() => Number)
  @IsInt()
  @Min(1024)
  @Max(65535)
  EMBEDDED_PG_PORT = 54329;

  @IsOptional()
  @IsString()
  EMBEDDED_PG_DIR?: string;

  /** `production`: start-up notices go to the structured log instead of a terminal's plain text. */
  @IsOptional()
  @IsString()
  NODE_ENV?: string;

  /** Set (to anything but `0` or `false`): the import's loader prints each statement's time on stderr. */
  @Transform(({ value }: { value: unknown }) => value !== undefined && value !== '0' && value !== 'false')
  @IsBoolean()
  GPUCAP_IMPORT_TRACE = false;

  /** Set by Kubernetes in every pod: sync's Kubernetes source may then use the pod's service account. */
  @IsOptional()
  @IsString()
  KUBERNETES_SERVICE_HOST?: string;
}

/** The replicas of DATABASE_READ_URLS, in the order given (their position names them). */
export function readUrls(config: Pick<AppConfig, 'DATABASE_READ_URLS'>): string[] {
  return (config.DATABASE_READ_URLS ?? '')
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
}

export class ConfigError extends Error {}

/** Parsed, never printed: the message names the variable, not its value (it may hold a password). */
function isPostgresUrl(value: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

function isPublicKey(value: string): boolean {
  try {
    createPublicKey(value.replace(/\\n/g, '\n'));
    return true;
  } catch {
    return false;
  }
}

function presentEntries(env: NodeJS.ProcessEnv): Record<string, string> {
  const present: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && value !== '') present[key] = value;
  }
  return present;
}

/** Validates the environment; a bad value throws a ConfigError naming every offending variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const config = plainToInstance(AppConfig, presentEntries(env), { excludeExtraneousValues: false });
  const errors = validateSync(config, { whitelist: false, forbidUnknownValues: false });
  const problems = errors.map((error) => {
    const rules = Object.values(error.constraints ?? {}).join('; ');
    return `${error.property}: ${rules}`;
  });
  const jwtModes = [config.JWT_SECRET, config.JWT_PUBLIC_KEY, config.JWT_JWKS_URI].filter(Boolean).length;
  if (jwtModes > 1) {
    problems.push('JWT_SECRET, JWT_PUBLIC_KEY, JWT_JWKS_URI: set at most one of them');
  }
  if (config.DATABASE_URL !== undefined && !isPostgresUrl(config.DATABASE_URL)) {
    problems.push(
      'DATABASE_URL: must be a postgres:// or postgresql:// URL, e.g. postgres://user:pass@host:5432/db',
    );
  }
  if (config.DATABASE_READ_URLS !== undefined && !readUrls(config).every(isPostgresUrl)) {
    problems.push('DATABASE_READ_URLS: must be comma-separated postgres:// or postgresql:// URLs');
  }
  if (config.JWT_PUBLIC_KEY !== undefined && !isPublicKey(config.JWT_PUBLIC_KEY)) {
    problems.push('JWT_PUBLIC_KEY: must be a PEM public key (RSA or EC); newlines may be written as \\n');
  }
  if (config.TRUSTED_PROXIES !== undefined && !isValidTrustedProxyList(config.TRUSTED_PROXIES)) {
    problems.push('TRUSTED_PROXIES: must be a comma-separated list of IP addresses or CIDR ranges');
  }
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return config;
}
