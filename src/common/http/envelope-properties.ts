import { ApiProperty } from '@nestjs/swagger';
import { AsOfMetadataDto } from './as-of-metadata.dto';

/** `request_id` of every envelope, success or error: one description for every schema. */
export const ApiRequestIdProperty = () =>
  ApiProperty({
    description:
      'your X-Request-Id when it is 1 to 128 printable ASCII characters, else a new UUID; also in the X-Request-Id header',
  });

/** `metadata` of an envelope that carries nothing but the instant. */
export const ApiAsOfMetadataProperty = () =>
  ApiProperty({ type: AsOfMetadataDto, description: 'the instant the answer describes' });
