import { ApiToken } from './api-token.entity';
import { Initiative } from './initiative.entity';
import { Member } from './member.entity';
import { Organization } from './organization.entity';

/**
 * The tables read through TypeORM repositories: the tenancy the guard resolves scope from, and API
 * tokens. Everything else is read and written by deliberate SQL (docs/sql/), so it has no entity.
 */
export const ENTITIES = [Organization, Initiative, Member, ApiToken];
