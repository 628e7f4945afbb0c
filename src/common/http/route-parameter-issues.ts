import type { ExecutionContext } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { Request } from 'express';
import { ApiError, type ErrorDetail } from './api-error';
import { ContractValidationPipe } from './contract-validation.pipe';

interface RouteArgument {
  index: number;
  data?: string;
}

const pipe = new ContractValidationPipe();

/**
 * What the validation pipe would say of the route's path and query parameters, run ahead of it.
 * A request the guard refuses before the pipes run (a missing X-Organization-Id) must still report
 * every offending field at once, as the contract asks, not the header alone.
 */
export async function routeParameterIssues(context: ExecutionContext): Promise<ErrorDetail[]> {
  const controller = context.getClass();
  const method = context.getHandler().name;
  const declared = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, method) ?? {}) as Record<
    string,
    RouteArgument
  >;
  const types = (Reflect.getMetadata('design:paramtypes', controller.prototype, method) ?? []) as unknown[];
  const request = context.switchToHttp().getRequest<Request>();
  const sources = new Map([
    [RouteParamtypes.PARAM, { type: 'param' as const, values: request.params }],
    [RouteParamtypes.QUERY, { type: 'query' as const, values: request.query }],
  ]);
  const issues: ErrorDetail[] = [];
  const byPosition = Object.entries(declared).sort(([, a], [, b]) => a.index - b.index);
  for (const [key, argument] of byPosition) {
    const source = sources.get(Number(key.split(':')[0]));
    if (!source) continue;
    const value = argument.data === undefined ? source.values : source.values[argument.data];
    try {
      await pipe.transform(value, {
        type: source.type,
        metatype: types[argument.index] as never,
        data: argument.data,
      });
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      issues.push(...error.details);
    }
  }
  return issues;
}
