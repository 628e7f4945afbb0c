import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInstance,
  IsInt,
  IsNumber,
  IsString,
  Length,
  Matches,
  Max,
  Min,
} from 'class-validator';
import { parseContractDate } from './contract-date';
import { IDENTIFIER_ISSUE, IDENTIFIER_PATTERN } from '../../core/identifier';

/** An identifier (contract §4): 1..128 characters of [A-Za-z0-9._:-]. */
export function IsIdentifier(): PropertyDecorator {
  return Matches(IDENTIFIER_PATTERN, { message: IDENTIFIER_ISSUE });
}

/** A cluster id as workloads carry it: free text of 1 to 256 characters, one value. */
export function IsClusterId(): PropertyDecorator {
  return applyDecorators(
    IsString({ message: 'must be a single string' }),
    Length(1, 256, { message: 'must be 1 to 256 characters' }),
  );
}

/** `true` or `false` only; anything else (including `1`, `yes`, repeats) fails validation. */
export function QueryBoolean(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value)),
    IsBoolean({ message: 'must be true or false' }),
  );
}

/** A decimal integer within [min, max]; `1.5`, `1e2`, ` 3` and repeats fail. */
export function QueryInteger(min: number, max: number): PropertyDecorator {
  const issue = `must be an integer from ${min} to ${max}`;
  return applyDecorators(
    Transform(({ value }) =>
      typeof value === 'string' && /^-?\d{1,15}$/.test(value) ? Number(value) : value,
    ),
    IsInt({ message: issue }),
    Min(min, { message: issue }),
    Max(max, { message: issue }),
  );
}

/** One of a fixed set of strings. */
export function QueryEnum(values: readonly string[]): PropertyDecorator {
  return IsIn(values as string[], { message: `must be one of ${values.join(', ')}` });
}

/** A contract date (ISO 8601 timestamp with offset, or YYYY-MM-DD as 00:00 UTC), turned into a Date. */
export function QueryDate(): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }) => (typeof value === 'string' ? (parseContractDate(value) ?? value) : value)),
    IsInstance(Date, {
      message:
        'must be an ISO 8601 timestamp with an offset (e.g. 2026-11-20T10:15:00Z) or a date YYYY-MM-DD',
    }),
  );
}

/** A decimal number at least `min` (`12`, `0.5`); `1e2`, `.5`, ` 3` and repeats fail. */
export function QueryNumber(min: number): PropertyDecorator {
  const issue = `must be a number at least ${min}, such as 12 or 0.5`;
  return applyDecorators(
    Transform(({ value }) =>
      typeof value === 'string' && /^-?\d{1,12}(\.\d{1,6})?$/.test(value) ? Number(value) : value,
    ),
    IsNumber({ allowNaN: false, allowInfinity: false }, { message: issue }),
    Min(min, { message: issue }),
  );
}
