import { applyDecorators } from '@nestjs/common';
import { ApiProduces } from '@nestjs/swagger';

/** The operation answers `Accept: text/csv` with a CSV file as well as JSON. */
export function ApiProducesCsv(): MethodDecorator {
  return applyDecorators(ApiProduces('application/json', 'text/csv'));
}
