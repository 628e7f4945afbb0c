import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { IS_PUBLIC } from '../common/auth/public.decorator';
import { DatabaseUnresponsiveError, DatabaseStallWatch } from '../database/database-stall-watch';
import { DatabaseNotConnectedError } from '../database/database-unavailable';

/**
 * Runs before authentication: until the service has reached its database once, every route but the
 * public ones (health, which reports the database itself) answers 503 SERVICE_UNAVAILABLE; so does
 * every such route while the stall watch finds the database unresponsive, without waiting on it.
 */
@Injectable()
export class DatabaseReadyGuard implements CanActivate {
  constructor(
    private readonly dataSource: DataSource,
    private readonly reflector: Reflector,
    private readonly stallWatch: DatabaseStallWatch,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.dataSource.isInitialized && !this.stallWatch.isUnresponsive) return true;
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    throw this.dataSource.isInitialized ? new DatabaseUnresponsiveError() : new DatabaseNotConnectedError();
  }
}
