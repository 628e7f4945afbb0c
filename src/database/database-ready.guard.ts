import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { IS_PUBLIC } from '../common/auth/public.decorator';
import { DatabaseNotConnectedError } from './database-unavailable';

/**
 * Runs before authentication: until the service has reached its database once, every route but the
 * public ones (health, which reports the database itself) answers 503 SERVICE_UNAVAILABLE.
 */
@Injectable()
export class DatabaseReadyGuard implements CanActivate {
  constructor(
    private readonly dataSource: DataSource,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.dataSource.isInitialized) return true;
    const isPublic = this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (isPublic) return true;
    throw new DatabaseNotConnectedError();
  }
}
