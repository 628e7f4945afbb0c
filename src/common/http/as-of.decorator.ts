import { createParamDecorator, ExecutionContext } from '@nestjs/common';

export interface RequestWithAsOf {
  asOf?: Date;
}

/**
 * The instant a request's answer describes, read once by the envelope interceptor: the handler
 * computes running figures at it and `metadata.as_of` names it, so the two never differ by the
 * milliseconds between two readings of the clock.
 */
export const AsOf = createParamDecorator((_data: unknown, context: ExecutionContext): Date => {
  const request = context.switchToHttp().getRequest<RequestWithAsOf>();
  if (!request.asOf) throw new Error('AsOf requested on a route the envelope interceptor did not see');
  return request.asOf;
});
