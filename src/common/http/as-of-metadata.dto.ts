import { ApiProperty } from '@nestjs/swagger';

/** `metadata` of every answer about an organization's data (the response cache's validity rests on it). */
export class AsOfMetadataDto {
  @ApiProperty({
    format: 'date-time',
    description:
      'The instant the answer describes: figures that grow with the clock (running workloads, burn rates) are as of then. A cached answer keeps the as_of it was computed at (at most RESPONSE_CACHE_TTL_SECONDS old, and never older than the last write)',
  })
  as_of: string;

  @ApiProperty({
    format: 'date-time',
    description:
      'The instant up to which every write is included in the data the answer was computed from: on the primary database, when its read began; on a streaming replica (DATABASE_READ_URLS), that instant less how far the replica lags. Also in the X-Data-As-Of header. A cached answer keeps the data_as_of it was computed with (its data version is unchanged since)',
  })
  data_as_of: string;
}
