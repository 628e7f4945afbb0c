import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'gpucap:isPublic';

/** Opts a route out of the default-deny guard. Only health uses it. */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);
