import { Role, ROLES } from '../../core/roles';
import { ApiTokenService } from '../../common/auth/api-token.service';
import { ApiToken } from '../../database/entities/api-token.entity';
import { Initiative } from '../../database/entities/initiative.entity';
import { Organization } from '../../database/entities/organization.entity';
import type { DataSource } from 'typeorm';
import { CliContext, Command, UsageError } from '../cli-context';
import { commandSpec, helpText, parseFor } from '../command-line';
import { parseDurationFlag } from '../duration';
import { withDatabase } from '../with-database';

export const tokensCommand: Command = async (args, context) => {
  const [action, ...rest] = args;
  switch (action) {
    case 'create':
      return createToken(rest, context);
    case 'list':
      return listTokens(rest, context);
    case 'revoke':
      return revokeToken(rest, context);
    default:
      throw new UsageError(
        `${action === undefined ? 'missing COMMAND' : `unknown command '${action}'`}\n${helpText(commandSpec('tokens'))}`,
      );
  }
};

/** `--help` of a subcommand called directly (the command line answers it before loading this). */
function helped(values: { help?: unknown }, path: string, context: CliContext): boolean {
  if (values.help) context.stdout.write(`${helpText(commandSpec(path))}\n`);
  return values.help === true;
}

async function createToken(args: string[], context: CliContext): Promise<number> {
  const parsed = parseFor('tokens create', args).values;
  if (helped(parsed, 'tokens create', context)) return 0;
  const values = parsed as {
    org?: string;
    role?: string;
    initiative?: string[];
    name?: string;
    'expires-in'?: string;
  };
  if (!values.org) throw new UsageError('--org is required');
  if (!ROLES.includes(values.role as Role)) throw new UsageError(`--role must be one of ${ROLES.join(', ')}`);
  const role = values.role as Role;
  const initiativeIds = [...new Set(values.initiative ?? [])];
  if (role !== 'ORG_ADMIN' && initiativeIds.length === 0) {
    throw new UsageError(`--initiative is required at least once for ${role}`);
  }
  const expiresAt = values['expires-in']
    ? new Date(Date.now() + parseDurationFlag(values['expires-in'], '--expires-in'))
    : null;

  return withDatabase(context, async (dataSource) => {
    await assertOrganizationAndInitiatives(dataSource, values.org as string, initiativeIds);
    const { token, record } = await tokenService(dataSource).create({
      organizationId: values.org as string,
      role,
      initiativeIds: role === 'ORG_ADMIN' ? [] : initiativeIds,
      name: values.name ?? `${role.toLowerCase()} token`,
      expiresAt,
    });
    context.stderr.write(`Created token ${record.tokenId} (${role}); it is shown once, store it now:\n`);
    context.stdout.write(`${token}\n`);
    return 0;
  });
}

async function listTokens(args: string[], context: CliContext): Promise<number> {
  const { values } = parseFor('tokens list', args);
  if (helped(values, 'tokens list', context)) return 0;
  if (!values.org) throw new UsageError('--org is required');
  return withDatabase(context, async (dataSource) => {
    const tokens = await tokenService(dataSource).list(values.org as string);
    const rows = tokens.map((token) => ({
      token_id: token.tokenId,
      name: token.name,
      role: token.role,
      initiative_ids: token.initiativeIds,
      created_at: token.createdAt.toISOString(),
      expires_at: token.expiresAt?.toISOString() ?? null,
      revoked_at: token.revokedAt?.toISOString() ?? null,
      last_used_at: token.lastUsedAt?.toISOString() ?? null,
    }));
    context.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return 0;
  });
}

async function revokeToken(args: string[], context: CliContext): Promise<number> {
  const { values, positionals } = parseFor('tokens revoke', args);
  if (helped(values, 'tokens revoke', context)) return 0;
  const [tokenId] = positionals;
  return withDatabase(context, async (dataSource) => {
    if (!(await tokenService(dataSource).revoke(tokenId))) {
      context.stderr.write(`No token with id '${tokenId}'\n`);
      return 1;
    }
    context.stdout.write(`Revoked ${tokenId}\n`);
    return 0;
  });
}

export function tokenService(dataSource: DataSource): ApiTokenService {
  return new ApiTokenService(dataSource.getRepository(ApiToken));
}

async function assertOrganizationAndInitiatives(
  dataSource: DataSource,
  organizationId: string,
  initiativeIds: string[],
) {
  if (!(await dataSource.getRepository(Organization).existsBy({ organizationId }))) {
    throw new UsageError(`No organization '${organizationId}'`);
  }
  const known = await dataSource.getRepository(Initiative).findBy({ organizationId });
  const missing = initiativeIds.filter((id) => !known.some((initiative) => initiative.initiativeId === id));
  if (missing.length)
    throw new UsageError(`Unknown initiative(s) in ${organizationId}: ${missing.join(', ')}`);
}
